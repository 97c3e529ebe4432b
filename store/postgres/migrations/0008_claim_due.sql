-- The claim query (ClaimExpired, what every idle node polls) takes the
-- runs waiting longest: unowned first (lease_until 0), then by lease
-- expiry, ties oldest first. An index in that order answers it by reading
-- only claimable runs and stopping at the limit, so no plan, with or
-- without statistics, walks the running runs that other nodes hold (as a
-- scan of swarm_runs_state_rid in rid order did). It replaces
-- swarm_runs_claim. Version 7 is taken by another change; this one does
-- not depend on it.
CREATE INDEX swarm_runs_claim_due ON swarm_runs (lease_until, rid) WHERE state = 'running';
DROP INDEX swarm_runs_claim;
