-- Posts into one mailbox in groups. A post locked its recipients' rows
-- until its commit was flushed, so one mailbox took one post per WAL
-- flush, however many nodes posted. Now a post first commits its mail
-- here, taking no lock (posts of the same moment share a flush), then
-- numbers it into swarm_mail under an advisory lock per mailbox: the
-- holder numbers every mail staged for the mailbox so far, in one
-- transaction, and the posts whose mail it numbered find it done. A post
-- returns once its mail is numbered and committed, as before. Mails left
-- staged by a poster that died between the two steps are numbered by the
-- next post to the mailbox, or by a read of it a few seconds later.
CREATE TABLE swarm_mail_staged (
	sid        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	rid        bigint NOT NULL,
	id         text NOT NULL,
	sender     text NOT NULL DEFAULT '',
	type       text NOT NULL DEFAULT '',
	request_id text NOT NULL DEFAULT '',
	reply_to   text NOT NULL DEFAULT '',
	content    text NOT NULL DEFAULT '',
	time       bigint NOT NULL
);
CREATE INDEX swarm_mail_staged_rid ON swarm_mail_staged (rid, sid);
