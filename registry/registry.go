package registry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Errors returned by a [Registry]; match them with errors.Is.
var (
	// ErrInvalid reports an entry that cannot be registered or search
	// options that cannot be satisfied.
	ErrInvalid = errors.New("registry: invalid")
	// ErrDuplicate reports an id that is already registered.
	ErrDuplicate = errors.New("registry: duplicate id")
)

// DefaultLimit is the number of hits a search returns when
// [SearchOptions.Limit] is 0.
const DefaultLimit = 10

// Hit is one search result.
type Hit struct {
	// Entry is a copy of the registered entry.
	Entry Entry `json:"entry"`
	// Score is the ranker's relevance score; 0 for a search without a query.
	Score float64 `json:"score"`
}

// SearchOptions narrow a search. Every filter must hold for an entry to be
// returned.
type SearchOptions struct {
	// Capabilities the entry must all have. Names are compared after
	// normalisation, so "flight booker", "flightBooker" and
	// "handoff_to_flight_booker" all match the capability "flight_booker",
	// and "search flight" matches "search_flights". A name without a
	// searchable word (blank, or only stop words) is ignored.
	Capabilities []string
	// Tags the entry must all have, compared like capabilities.
	Tags []string
	// Kind, if not empty, is the only kind returned.
	Kind Kind
	// Limit is the most hits returned: 0 means [DefaultLimit], a negative
	// number means no limit.
	Limit int
	// Allow, if not nil, is asked about each candidate id; entries it
	// rejects are never returned. It restricts what a caller may discover.
	Allow func(id string) bool
}

// Registry is a searchable catalogue of swarms and agents. It is safe for
// concurrent use. Writes only touch a map under a short lock; the search
// index is rebuilt lazily by the first search after a change, into a new
// snapshot, so searches never block writers while an index is built and a
// search always sees every write that completed before it began.
type Registry struct {
	ranker Ranker

	mu      sync.RWMutex
	entries map[string]Entry
	version atomic.Uint64 // bumped under mu on every change

	snap  atomic.Pointer[snapshot]
	build chan struct{} // a one-slot lock held while building a snapshot
}

// snapshot is an immutable view of the registry with its index.
type snapshot struct {
	version uint64
	entries []Entry    // sorted by id
	caps    [][]string // match keys of each entry's capabilities
	tags    [][]string // match keys of each entry's tags
	index   Index
}

// Option configures a [Registry].
type Option func(*Registry)

// WithRanker makes the registry rank searches with r instead of [BM25].
func WithRanker(r Ranker) Option { return func(g *Registry) { g.ranker = r } }

// New returns an empty registry.
func New(opts ...Option) *Registry {
	g := &Registry{ranker: BM25{}, entries: map[string]Entry{}, build: make(chan struct{}, 1)}
	for _, o := range opts {
		o(g)
	}
	if g.ranker == nil {
		g.ranker = BM25{}
	}
	return g
}

// Add registers entries whose ids are not registered yet. It adds all of
// them or, if one is invalid or its id is taken (or given twice), none.
func (g *Registry) Add(entries ...Entry) error { return g.put(false, entries) }

// Put registers entries, replacing any registered under the same ids. It
// adds all of them or, if one is invalid or an id is given twice, none.
func (g *Registry) Put(entries ...Entry) error { return g.put(true, entries) }

func (g *Registry) put(replace bool, entries []Entry) error {
	seen := make(map[string]bool, len(entries))
	for i := range entries {
		if err := entries[i].validate(); err != nil {
			return err
		}
		if seen[entries[i].ID] {
			return fmt.Errorf("%w: %q is given twice", ErrDuplicate, entries[i].ID)
		}
		seen[entries[i].ID] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !replace {
		for _, e := range entries {
			if _, ok := g.entries[e.ID]; ok {
				return fmt.Errorf("%w: %q is already registered", ErrDuplicate, e.ID)
			}
		}
	}
	for _, e := range entries {
		g.entries[e.ID] = e.clone()
	}
	if len(entries) > 0 {
		g.version.Add(1)
	}
	return nil
}

// Remove unregisters id and reports whether it was registered.
func (g *Registry) Remove(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.entries[id]; !ok {
		return false
	}
	delete(g.entries, id)
	g.version.Add(1)
	return true
}

// Get returns a copy of the entry registered under id.
func (g *Registry) Get(id string) (Entry, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	e, ok := g.entries[id]
	return e.clone(), ok
}

// Len returns the number of registered entries.
func (g *Registry) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.entries)
}

// List returns copies of all entries, sorted by id.
func (g *Registry) List() []Entry {
	g.mu.RLock()
	out := make([]Entry, 0, len(g.entries))
	for _, e := range g.entries {
		out = append(out, e.clone())
	}
	g.mu.RUnlock()
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Search returns the entries that match query and opts, best first, ties
// broken by id. A query of only white space returns every entry that
// passes the filters, sorted by id, with score 0; otherwise only entries
// the ranker finds relevant are returned. The error is the context's, or
// the ranker's if it fails to build its index or to search.
func (g *Registry) Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error) {
	if opts.Kind != "" && opts.Kind != KindSwarm && opts.Kind != KindAgent {
		return nil, fmt.Errorf("%w: kind %q is neither %q nor %q", ErrInvalid, opts.Kind, KindSwarm, KindAgent)
	}
	s, err := g.current(ctx)
	if err != nil {
		return nil, err
	}
	limit := opts.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	f := newFilter(opts)
	if strings.TrimSpace(query) == "" {
		var out []Hit
		for d := range s.entries {
			if limit >= 0 && len(out) == limit {
				break
			}
			if f.keep(s, d) {
				out = append(out, Hit{Entry: s.entries[d].clone()})
			}
		}
		return out, nil
	}
	ms, err := s.index.Search(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("registry: search: %w", err)
	}
	kept := best(ms, limit, func(d int) bool { return d >= 0 && d < len(s.entries) && f.keep(s, d) })
	out := make([]Hit, len(kept))
	for i, m := range kept {
		out[i] = Hit{Entry: s.entries[m.Doc].clone(), Score: m.Score}
	}
	return out, nil
}

// before reports whether a ranks before b: higher score first, then lower
// position, which is id order since snapshots are sorted by id.
func before(a, b Match) bool {
	return a.Score > b.Score || (a.Score == b.Score && a.Doc < b.Doc)
}

// compareMatches orders matches by rank; see before.
func compareMatches(a, b Match) int {
	switch {
	case before(a, b):
		return -1
	case before(b, a):
		return 1
	}
	return 0
}

// best returns, in rank order, the at most limit (all if negative) matches
// with a positive score whose entry passes keep. It reorders ms in place and
// returns a prefix of it. A small limit is served by a bounded insertion
// into the prefix, so that a search does not sort every match.
func best(ms []Match, limit int, keep func(int) bool) []Match {
	top := ms[:0]
	if limit < 0 || limit > 64 {
		for _, m := range ms {
			if m.Score > 0 && keep(m.Doc) {
				top = append(top, m)
			}
		}
		slices.SortFunc(top, compareMatches)
		if limit >= 0 && len(top) > limit {
			top = top[:limit]
		}
		return top
	}
	for _, m := range ms {
		if !(m.Score > 0) || !keep(m.Doc) {
			continue
		}
		if limit >= 0 && len(top) == limit {
			if limit == 0 || !before(m, top[limit-1]) {
				continue
			}
			top = top[:limit-1]
		}
		i, _ := slices.BinarySearchFunc(top, m, compareMatches)
		top = slices.Insert(top, i, m)
	}
	return top
}

// current returns a snapshot that reflects every write completed before
// the call, building one if the last is out of date.
func (g *Registry) current(ctx context.Context) (*snapshot, error) {
	if s := g.snap.Load(); s != nil && s.version == g.version.Load() {
		return s, nil
	}
	select {
	case g.build <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-g.build }()
	// Another search may have built it while this one waited.
	if s := g.snap.Load(); s != nil && s.version == g.version.Load() {
		return s, nil
	}
	g.mu.RLock()
	s := &snapshot{version: g.version.Load(), entries: slices.Collect(maps.Values(g.entries))}
	g.mu.RUnlock()

	slices.SortFunc(s.entries, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	s.caps = make([][]string, len(s.entries))
	s.tags = make([][]string, len(s.entries))
	for d, e := range s.entries {
		s.caps[d] = matchKeys(e.Capabilities)
		s.tags[d] = matchKeys(e.Tags)
	}
	ix, err := g.ranker.Index(ctx, s.entries)
	if err != nil {
		return nil, fmt.Errorf("registry: build index: %w", err)
	}
	s.index = ix
	g.snap.Store(s)
	return s, nil
}

// matchKeys returns the non-empty match keys of names.
func matchKeys(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if k := matchKey(n); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// filter is SearchOptions prepared for matching.
type filter struct {
	caps, tags []string
	kind       Kind
	allow      func(string) bool
}

func newFilter(o SearchOptions) filter {
	return filter{caps: matchKeys(o.Capabilities), tags: matchKeys(o.Tags), kind: o.Kind, allow: o.Allow}
}

func (f *filter) keep(s *snapshot, d int) bool {
	e := &s.entries[d]
	if f.kind != "" && e.Kind != f.kind {
		return false
	}
	for _, c := range f.caps {
		if !slices.Contains(s.caps[d], c) {
			return false
		}
	}
	for _, t := range f.tags {
		if !slices.Contains(s.tags[d], t) {
			return false
		}
	}
	return f.allow == nil || f.allow(e.ID)
}
