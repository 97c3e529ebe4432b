package registry

import "context"

// Ranker builds a search index over a set of entries. The [Registry] calls
// Index lazily, on the first search after its entries changed, with all of
// its entries sorted by id, and keeps the returned [Index] until the next
// change. Index must not keep or modify the slice's entries beyond what it
// needs to rank them.
//
// [BM25] is the default ranker. An embedding ranker fits the same shape:
// Index embeds each entry's text (id, description, capabilities and tags)
// and keeps the vectors — caching them by id and text, since Index runs
// again with the whole catalogue after every change and usually only one
// entry is new; the returned Index's Search embeds the query and returns
// the entries whose cosine similarity exceeds a threshold, with the
// similarity as their score. Both calls take a context and return an error
// for that reason: embedding means network calls that can fail or be
// cancelled. A hybrid ranker can run BM25 and an embedding index side by
// side and merge their scores.
type Ranker interface {
	// Index builds an index over entries, which are sorted by id.
	Index(ctx context.Context, entries []Entry) (Index, error)
}

// Index answers queries over the entries a [Ranker] indexed. It must be
// safe for concurrent use.
type Index interface {
	// Search returns the entries relevant to query, in any order, each at
	// most once, with a positive score where higher means more relevant.
	// Match.Doc is the entry's position in the slice given to Index.
	// Entries that do not match at all are left out. The caller owns the
	// returned slice.
	Search(ctx context.Context, query string) ([]Match, error)
}

// Match is one relevant entry found by an [Index].
type Match struct {
	// Doc is the entry's position in the slice the index was built from.
	Doc int
	// Score is the entry's relevance; greater is better.
	Score float64
}
