-- The parts of a mail (store.Mail.Parts) as JSON: large ones by reference
-- to blobs its recipient refers to.
ALTER TABLE swarm_mail ADD COLUMN parts text NOT NULL DEFAULT '';
