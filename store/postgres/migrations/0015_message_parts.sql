-- The parts of an inbox message (store.Message.Parts) as JSON: a user's
-- message to a conversation with its images and files, large ones by
-- reference to blobs the run refers to.
ALTER TABLE swarm_inbox ADD COLUMN parts text NOT NULL DEFAULT '';
