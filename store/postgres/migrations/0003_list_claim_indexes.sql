-- Indexes in the order of the queries that use them, so that no plan
-- depends on fresh statistics to avoid walking the primary key:
-- each list filter, newest first: (swarm, rid), (state, rid), (parent,
-- rid). They replace the single-column indexes.
CREATE INDEX swarm_runs_swarm_rid ON swarm_runs (swarm, rid);
CREATE INDEX swarm_runs_state_rid ON swarm_runs (state, rid);
CREATE INDEX swarm_runs_parent_rid ON swarm_runs (parent, rid) WHERE parent <> '';
DROP INDEX swarm_runs_swarm;
DROP INDEX swarm_runs_state;
DROP INDEX swarm_runs_parent;
-- Every append updates its run's row (last_seq, updated_at, usage: no
-- indexed column), so leave room in each page for those updates to stay
-- on the page (HOT, no new index entries), and vacuum and analyze the
-- table after 2% of it changed rather than 20%: finished runs leave dead
-- entries in the partial indexes of running runs.
ALTER TABLE swarm_runs SET (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
