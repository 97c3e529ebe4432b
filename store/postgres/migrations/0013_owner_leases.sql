-- Leases per owner. A heartbeat (Renew) used to update the row of every
-- running run its node held, and each update left a dead entry in the
-- claim index, which the idle claim poll stepped over until a vacuum. Now
-- a heartbeat updates its owner's one row here (until: the lease it
-- renewed, 0 for none), and a run's lease runs until the later of its own
-- lease_until (set when it is created or claimed) and its owner's until.
-- The runs' rows change only when a run changes hands.
--
-- Invariant kept by the code: every owner of a running run has a row here
-- (created by Create and the claims, in the statement that gives the run
-- to the owner, under a shared advisory lock on the owner; deleted only
-- under the exclusive lock, and only when it holds no running run), so
-- that the claim poll finds every claimable run from these rows and the
-- unowned runs' index:
--   * swarm_runs_unowned: running runs with no owner, which only a
--     release, a resume or a mail's wake-up enters and a claim leaves;
--   * swarm_runs_held: running runs by owner and lease, read for the
--     owners whose lease here ran out (and by Renew for its own runs).
-- Finished runs leave their dead entries only under the owner that held
-- them, which the poll reads only while that owner's lease is out.
CREATE TABLE swarm_leases (
	owner text PRIMARY KEY,
	until bigint NOT NULL DEFAULT 0
) WITH (fillfactor = 50);
-- Running runs' leases carry over: their owners get a row with no renewed
-- lease, so each run's lease_until stays what it was.
INSERT INTO swarm_leases (owner) SELECT DISTINCT owner FROM swarm_runs WHERE state = 'running' AND owner <> '';
CREATE INDEX swarm_runs_unowned ON swarm_runs (rid) WHERE state = 'running' AND owner = '';
CREATE INDEX swarm_runs_held ON swarm_runs (owner, lease_until, rid) WHERE state = 'running' AND owner <> '';
DROP INDEX swarm_runs_claim_due;
DROP INDEX swarm_runs_owner;
