-- The tool calls of a run tree's budget pool, reserved before each tool
-- runs (see Store.Spend).
ALTER TABLE swarm_runs ADD COLUMN pool_tools bigint NOT NULL DEFAULT 0;
