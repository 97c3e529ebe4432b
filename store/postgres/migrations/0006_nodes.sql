-- Nodes (store.NodeDirectory): the nodes of a network that share this
-- database announce themselves here with a heartbeat, so that they find
-- each other with no peer URLs configured. Versions 5, 7 and 8 are taken by
-- other changes; this one depends on none of them.
CREATE TABLE swarm_nodes (
	id        text PRIMARY KEY,
	url       text NOT NULL,
	heartbeat timestamptz NOT NULL
);
