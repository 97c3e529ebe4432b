// Package memory gives agents what they remember across runs and
// processes (memory banks) and what they can look up (knowledge).
//
// A memory bank is a set of keyed text entries kept in the runtime's store
// ([store.Memories]: the memory, SQLite and PostgreSQL stores keep them).
// A [Memory] names a bank and offers an agent three tools over it:
// memory_read, memory_write and memory_search. Append them to the agent's
// Tools:
//
//	mem := &memory.Memory{Store: rt.Store(), Bank: "user:{user}"}
//	support := &swarm.Agent{Name: "support", Tools: mem.Tools()}
//
// A bank name may hold placeholders filled at each call, so one agent can
// remember per customer, per team or per run: {run} is the run's id,
// {root} the id of its run tree's root (a team's lead: teammates share it),
// and any other {name} a value the run was started with
// ([swarm.WithValues]), looked up in the run's journal, so a run recovered
// in another process finds the same bank. A fixed name ("agent:support",
// "swarm:triage") is shared by every run.
//
// Durability. A tool call is a journaled step: its result is recorded, so
// a replayed run reads what its first attempt read and never calls the
// tool again. A crash after a write reached the store and before its
// result was journaled runs the call again; the write carries the call's
// [swarm.IdempotencyKey] and the bank applies a key once, so the write is
// never doubled (nor lost: the rerun applies it if the first attempt did
// not). Concurrent writers — two runs, two processes — are serialized per
// bank by the store, which enforces the bank's limits atomically.
//
// Search works offline: entries are ranked by BM25 (the registry's
// ranker, [registry.BM25]) over key, text and tags. With an [Embedder] the
// entries' vectors, made at write time, are kept in the store, the query
// is embedded, and cosine similarity is fused with BM25 by reciprocal
// rank; in a run, each embedding request takes one model call from the
// run tree's budget pool, as a model request does. A search reads the
// bank once per change: the index is cached by the bank's version and
// refreshed with what changed since.
//
// An agent absorbed by a captain keeps its tools, hence its bank and
// knowledge; teammates share a bank named "team:{root}".
//
// Knowledge ([Knowledge]) is read-only text attached to an agent, split
// into chunks and offered through a knowledge_lookup tool, with a hook
// that fires when an entry is used.
//
// Every operation is traced with an OpenTelemetry span named after the
// GenAI conventions' memory operations (search_memory, update_memory,
// delete_memory), under the tool call's span, through the tracer provider
// of the span in the context (the runtime's, in a tool call).
package memory
