-- Blobs (store.Blobs): the bytes of large message parts, kept once by their
-- SHA-256, and the runs that refer to them. Deleting a run deletes its
-- references and the blobs left without any (see deletion).
CREATE TABLE swarm_blobs (
	hash text PRIMARY KEY,
	data bytea NOT NULL
);
CREATE TABLE swarm_blob_refs (
	rid  bigint NOT NULL,
	hash text NOT NULL,
	PRIMARY KEY (rid, hash)
);
CREATE INDEX swarm_blob_refs_hash ON swarm_blob_refs (hash);
