-- Snapshots (store.Snapshots): each run's newest snapshot, by the run's rid,
-- so that recovering a run with a long journal reads the snapshot and the
-- records after it. Derived from the journal; dropping a row loses nothing.
CREATE TABLE swarm_snapshots (
	rid  bigint PRIMARY KEY,
	seq  bigint NOT NULL,
	data bytea NOT NULL,
	time bigint NOT NULL
);
