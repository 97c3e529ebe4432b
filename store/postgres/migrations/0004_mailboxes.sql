-- Mailboxes (store.Mailboxes): an append-only log of mails per recipient run,
-- kept after they are acknowledged. swarm_mailboxes holds, per run that has
-- mail, the seq of its last mail and its ack cursor (acked), which an append
-- advances in its own statement. Version 3 is taken by another change; this
-- one does not depend on it.
CREATE TABLE swarm_mail (
	rid        bigint NOT NULL,
	seq        bigint NOT NULL,
	id         text NOT NULL,
	sender     text NOT NULL DEFAULT '',
	type       text NOT NULL DEFAULT '',
	request_id text NOT NULL DEFAULT '',
	reply_to   text NOT NULL DEFAULT '',
	content    text NOT NULL DEFAULT '',
	time       bigint NOT NULL,
	PRIMARY KEY (rid, seq),
	CONSTRAINT swarm_mail_id UNIQUE (rid, id)
);
CREATE TABLE swarm_mailboxes (
	rid   bigint PRIMARY KEY,
	last  bigint NOT NULL,
	acked bigint NOT NULL DEFAULT 0
);
