package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/swarmrt/swarm/registry"
	"github.com/swarmrt/swarm/store"
)

// Hit is one entry a search found.
type Hit struct {
	Key  string   `json:"key"`
	Text string   `json:"text"`
	Tags []string `json:"tags,omitempty"`
	// Score is the entry's relevance, greater is better: its BM25 score,
	// or with an Embedder its fused reciprocal-rank score.
	Score float64 `json:"score"`
}

// defaultSearchLimit is the hits a search returns when asked for none.
const defaultSearchLimit = 5

// maxSearchLimit bounds the hits of one search.
const maxSearchLimit = 100

// rrfK is the rank offset of reciprocal rank fusion (the customary 60).
const rrfK = 60

// Search returns the entries of bank most relevant to query, best first,
// at most limit of them (0: the Memory's SearchLimit). Entries that share
// no term with the query are left out, unless an Embedder ranks them by
// meaning.
func (m *Memory) Search(ctx context.Context, bank, query string, limit int) (hits []Hit, err error) {
	ctx, end := startSpan(ctx, opSearch, bank, "")
	defer func() { end(err, len(hits)) }()
	ms, err := m.memories()
	if err != nil {
		return nil, err
	}
	if err := store.CheckBank(bank); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = cmp.Or(m.SearchLimit, defaultSearchLimit)
	}
	limit = min(limit, maxSearchLimit)
	ix, err := m.cache.index(ctx, ms, bank, m.Embedder != nil)
	if err != nil {
		return nil, err
	}
	lex, err := ix.lexical.Search(ctx, query)
	if err != nil {
		return nil, err
	}
	scores := make(map[int]float64, len(lex))
	if m.Embedder == nil {
		for _, h := range lex {
			scores[h.Doc] = h.Score
		}
	} else {
		vs, err := m.embed(ctx, []string{query})
		if err != nil {
			return nil, err
		}
		fuse(scores, lex)
		fuse(scores, ix.cosine(vs[0]))
	}
	out := make([]Hit, 0, len(scores))
	for d, s := range scores {
		e := ix.entries[d]
		out = append(out, Hit{Key: e.Key, Text: e.Text, Tags: e.Tags, Score: s})
	}
	slices.SortFunc(out, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	for i := range out {
		// Four significant digits are all a reader needs, in fewer
		// tokens for a model.
		out[i].Score, _ = strconv.ParseFloat(strconv.FormatFloat(out[i].Score, 'g', 4, 64), 64)
	}
	return out, nil
}

// fuse adds the reciprocal rank of each match to scores.
func fuse(scores map[int]float64, ms []registry.Match) {
	slices.SortFunc(ms, func(a, b registry.Match) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Doc, b.Doc)
	})
	for rank, h := range ms {
		scores[h.Doc] += 1 / float64(rrfK+rank+1)
	}
}

// bankIndex is a bank's entries at one version with their indexes.
type bankIndex struct {
	version int64
	vectors bool
	entries []store.MemoryEntry
	lexical registry.Index
}

// cosine returns the entries with a vector of the query's length and a
// positive cosine similarity to q.
func (ix *bankIndex) cosine(q []float32) []registry.Match {
	qn := norm(q)
	if qn == 0 {
		return nil
	}
	var out []registry.Match
	for d, e := range ix.entries {
		if len(e.Vector) != len(q) {
			continue
		}
		var dot float64
		for i, x := range e.Vector {
			dot += float64(x) * float64(q[i])
		}
		en := norm(e.Vector)
		if en == 0 {
			continue
		}
		if s := dot / (qn * en); s > 0 {
			out = append(out, registry.Match{Doc: d, Score: s})
		}
	}
	return out
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// indexCache keeps the indexes of the banks searched last, each until its
// bank's version changes.
type indexCache struct {
	mu    sync.Mutex
	banks map[string]*bankIndex
	// building serializes rebuilds, so that concurrent searches of a
	// changed bank read it once.
	building sync.Mutex
}

// maxCachedBanks bounds the indexes kept.
const maxCachedBanks = 64

func (c *indexCache) index(ctx context.Context, ms store.Memories, bank string, vectors bool) (*bankIndex, error) {
	info, err := ms.Bank(ctx, bank)
	if err != nil {
		return nil, err
	}
	if ix := c.lookup(bank, info.Version, vectors); ix != nil {
		return ix, nil
	}
	c.building.Lock()
	defer c.building.Unlock()
	if ix := c.lookup(bank, info.Version, vectors); ix != nil {
		return ix, nil
	}
	entries, err := c.refresh(ctx, ms, bank, info, vectors)
	if err != nil {
		return nil, err
	}
	docs := make([]registry.Entry, len(entries))
	for i, e := range entries {
		docs[i] = registry.Entry{ID: e.Key, Description: e.Text, Tags: e.Tags}
	}
	lex, err := registry.BM25{}.Index(ctx, docs)
	if err != nil {
		return nil, fmt.Errorf("index memory bank %s: %w", bank, err)
	}
	// The entries may be newer than info: the index then carries an older
	// version, and the next search reads what changed since, which is
	// harmless.
	ix := &bankIndex{version: info.Version, vectors: vectors, entries: entries, lexical: lex}
	c.mu.Lock()
	if c.banks == nil || len(c.banks) >= maxCachedBanks {
		c.banks = map[string]*bankIndex{}
	}
	c.banks[bank] = ix
	c.mu.Unlock()
	return ix, nil
}

// refresh returns bank's entries as of info or later: the cached index's
// entries updated with those written since its version, when the bank's
// count shows that nothing was deleted meanwhile, else all of them read
// anew.
func (c *indexCache) refresh(ctx context.Context, ms store.Memories, bank string, info store.BankInfo, vectors bool) ([]store.MemoryEntry, error) {
	c.mu.Lock()
	old := c.banks[bank]
	c.mu.Unlock()
	if old != nil && (old.vectors || !vectors) && old.version < info.Version {
		changed, err := ms.ListMemories(ctx, bank, store.MemoryFilter{Since: old.version, Vectors: vectors})
		if err != nil {
			return nil, err
		}
		pos := make(map[string]int, len(old.entries))
		for i, e := range old.entries {
			pos[e.Key] = i
		}
		entries := slices.Clone(old.entries)
		for _, e := range changed {
			if i, ok := pos[e.Key]; ok {
				entries[i] = e
			} else {
				pos[e.Key] = len(entries)
				entries = append(entries, e)
			}
		}
		if int64(len(entries)) == info.Entries {
			return entries, nil
		}
		// Entries were deleted (or the bank changed under the reads):
		// read it whole.
	}
	return ms.ListMemories(ctx, bank, store.MemoryFilter{Vectors: vectors})
}

func (c *indexCache) lookup(bank string, version int64, vectors bool) *bankIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	ix := c.banks[bank]
	if ix == nil || ix.version != version || vectors && !ix.vectors {
		return nil
	}
	return ix
}
