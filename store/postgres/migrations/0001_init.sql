-- The first schema of a swarm store. Invariants kept by the code, relied on
-- by the queries:
--   * swarm_runs.owner is empty exactly when lease_until is 0, so that
--     "unowned or expired" is the index range lease_until <= now;
--   * swarm_runs.last_seq is the largest swarm_journal.seq of the run;
--   * swarm_runs.rid grows with creation (newest/oldest first).
-- Times are Unix nanoseconds (0 for none): journal times keep the caller's
-- nanoseconds, and lease times come from the database server's clock, which
-- all nodes share.
CREATE TABLE swarm_runs (
	rid         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id          text NOT NULL UNIQUE,
	swarm       text NOT NULL,
	parent      text NOT NULL DEFAULT '',
	state       text NOT NULL,
	turn        integer NOT NULL DEFAULT 0,
	max_turns   integer NOT NULL DEFAULT 0,
	agent       text NOT NULL DEFAULT '',
	result      bytea,
	reason      text NOT NULL DEFAULT '',
	usage       text,
	owner       text NOT NULL DEFAULT '',
	epoch       bigint NOT NULL,
	lease_until bigint NOT NULL DEFAULT 0,
	last_seq    bigint NOT NULL DEFAULT 0,
	created_at  bigint NOT NULL,
	updated_at  bigint NOT NULL
);
-- Claimable runs: running, by lease expiry.
CREATE INDEX swarm_runs_claim ON swarm_runs (lease_until) WHERE state = 'running';
CREATE INDEX swarm_runs_owner ON swarm_runs (owner) WHERE owner <> '';
CREATE INDEX swarm_runs_swarm ON swarm_runs (swarm);
CREATE INDEX swarm_runs_state ON swarm_runs (state);
CREATE INDEX swarm_runs_parent ON swarm_runs (parent) WHERE parent <> '';

CREATE TABLE swarm_journal (
	rid  bigint NOT NULL,
	seq  bigint NOT NULL,
	key  text NOT NULL,
	type text NOT NULL,
	data bytea,
	time bigint NOT NULL,
	PRIMARY KEY (rid, seq),
	CONSTRAINT swarm_journal_key UNIQUE (rid, key)
);

-- Identity: message ids are never reused, even after every message has been
-- acknowledged and deleted.
CREATE TABLE swarm_inbox (
	id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	rid  bigint NOT NULL,
	kind text NOT NULL,
	text text NOT NULL DEFAULT '',
	time bigint NOT NULL
);
CREATE INDEX swarm_inbox_run ON swarm_inbox (rid, id);
