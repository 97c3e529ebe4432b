-- Agents' memory banks (store.Memories). swarm_memory_banks holds each
-- bank's summary; a write locks its bank's row first, which serializes the
-- bank's writes across nodes so that its limits and version hold. Its
-- version grows with every change, so a reader can cache an index of the
-- bank. swarm_memories holds the entries (vector: little-endian float32s,
-- or NULL); swarm_memory_writes the write keys a bank applied, so that a
-- write retried after a crash is not applied twice. Times are Unix
-- nanoseconds. Names and keys sort bytewise (COLLATE "C"), as in Go.
CREATE TABLE swarm_memory_banks (
	bank       text COLLATE "C" PRIMARY KEY,
	version    bigint NOT NULL,
	entries    bigint NOT NULL,
	bytes      bigint NOT NULL,
	updated_at bigint NOT NULL
);
CREATE TABLE swarm_memories (
	bank       text COLLATE "C" NOT NULL,
	key        text COLLATE "C" NOT NULL,
	text       text NOT NULL,
	tags       text[] NOT NULL DEFAULT '{}',
	vector     bytea,
	version    bigint NOT NULL,
	created_at bigint NOT NULL,
	updated_at bigint NOT NULL,
	PRIMARY KEY (bank, key)
);
-- What changed in a bank since a version: readers refresh cached indexes.
CREATE INDEX swarm_memories_version ON swarm_memories (bank, version);
CREATE TABLE swarm_memory_writes (
	bank      text NOT NULL,
	write_key text NOT NULL,
	PRIMARY KEY (bank, write_key)
);
