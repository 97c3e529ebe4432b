// Package registry is a searchable catalogue of swarms and agents: each
// registered swarm or agent contributes an [Entry] (id, description, input
// and result schemas, capabilities derived from its handoffs and tools,
// tags, whether it is customizable), and a model discovers what to hand off
// to by searching it.
//
// A [Registry] ranks entries for a natural-language query with a pluggable
// [Ranker]; the default, [BM25], is field-weighted keyword search over ids,
// descriptions, capabilities and tags. [SearchOptions] filter by
// capabilities, tags and kind, cap the number of hits, and restrict what a
// caller may see with an Allow function. The package does not depend on the
// runtime: the runtime fills entries from its registered swarms and agents
// (using [Capabilities] for the capability words) and serves searches to
// models as tools.
//
// # Rankers
//
// A [Ranker] turns the registry's entries into an [Index] once per change,
// and the index answers queries. This split is what lets an embedding
// ranker plug in: its Index embeds every entry up front (and may cache the
// vectors by id and text across rebuilds), and its Search embeds only the
// query and scores entries by similarity. See [Ranker] for the contract.
package registry
