-- Teams (store.Teams): task boards and protocol requests, keyed by team
-- (the lead run's id, which needs no row of its own). swarm_teams holds,
-- per team that has tasks, the ID of its last task: AddTask takes the next
-- one by updating that row, which serializes a team's additions across
-- nodes and keeps its IDs dense (a rolled-back addition takes none).
-- blocked_by lists task IDs of the same board, sorted, without repeats.
-- swarm_requests.n numbers requests in order of creation. Times and
-- deadlines are Unix nanoseconds (0 for none); deadlines are compared with
-- the database server's clock.
CREATE TABLE swarm_teams (
	team      text PRIMARY KEY,
	last_task bigint NOT NULL
);
CREATE TABLE swarm_tasks (
	team        text NOT NULL,
	id          bigint NOT NULL,
	key         text NOT NULL DEFAULT '',
	subject     text NOT NULL,
	description text NOT NULL DEFAULT '',
	status      text NOT NULL,
	owner       text NOT NULL DEFAULT '',
	owner_run   text NOT NULL DEFAULT '',
	blocked_by  bigint[] NOT NULL DEFAULT '{}',
	result      text NOT NULL DEFAULT '',
	created_at  bigint NOT NULL,
	updated_at  bigint NOT NULL,
	PRIMARY KEY (team, id)
);
CREATE UNIQUE INDEX swarm_tasks_key ON swarm_tasks (team, key) WHERE key <> '';
CREATE INDEX swarm_tasks_owner ON swarm_tasks (team, owner_run) WHERE status = 'in_progress';
CREATE TABLE swarm_requests (
	n          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	team       text NOT NULL,
	id         text NOT NULL,
	kind       text NOT NULL,
	sender     text NOT NULL,
	recipient  text NOT NULL,
	content    text NOT NULL DEFAULT '',
	state      text NOT NULL,
	response   text NOT NULL DEFAULT '',
	deadline   bigint NOT NULL DEFAULT 0,
	created_at bigint NOT NULL,
	updated_at bigint NOT NULL,
	CONSTRAINT swarm_requests_id UNIQUE (team, id)
);
CREATE INDEX swarm_requests_due ON swarm_requests (team, deadline) WHERE state = 'pending' AND deadline > 0;
