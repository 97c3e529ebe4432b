-- Named secrets, which their callers encrypt (store.Secrets): the OAuth
-- tokens of the services agents call.
CREATE TABLE IF NOT EXISTS swarm_secrets (
	name  text PRIMARY KEY,
	value bytea NOT NULL,
	time  bigint NOT NULL
);
