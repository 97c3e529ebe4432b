-- The budget pool of a run tree, on its root run's row: model calls
-- reserved, and tokens and cost of the calls that returned (see Store.Spend).
ALTER TABLE swarm_runs
	ADD COLUMN pool_calls  bigint NOT NULL DEFAULT 0,
	ADD COLUMN pool_tokens bigint NOT NULL DEFAULT 0,
	ADD COLUMN pool_cost   double precision NOT NULL DEFAULT 0,
	ADD COLUMN pool_lifted boolean NOT NULL DEFAULT false;
