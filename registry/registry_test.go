package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

func newCatalogue(t testing.TB) *Registry {
	t.Helper()
	g := New()
	if err := g.Add(catalogue()...); err != nil {
		t.Fatal(err)
	}
	return g
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Entry.ID
	}
	return out
}

func search(t testing.TB, g *Registry, q string, o SearchOptions) []string {
	t.Helper()
	hits, err := g.Search(context.Background(), q, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(hits); i++ {
		a, b := hits[i-1], hits[i]
		if a.Score < b.Score || (a.Score == b.Score && a.Entry.ID >= b.Entry.ID) {
			t.Fatalf("%q: hits out of order at %d: %v", q, i, hits)
		}
	}
	return ids(hits)
}

func TestRegistryTopHits(t *testing.T) {
	g := newCatalogue(t)
	for _, c := range rankingCases {
		got := search(t, g, c.query, SearchOptions{Limit: 3})
		if len(got) == 0 || got[0] != c.top {
			t.Errorf("%q: %q, want %q first", c.query, got, c.top)
		}
		if len(got) > 3 {
			t.Errorf("%q: %d hits over a limit of 3", c.query, len(got))
		}
	}
}

// TestRegistryInsertionOrder checks that results do not depend on the order
// entries were added in, nor on removing and adding back.
func TestRegistryInsertionOrder(t *testing.T) {
	want := map[string][]string{}
	g := newCatalogue(t)
	for _, c := range rankingCases {
		want[c.query] = search(t, g, c.query, SearchOptions{Limit: -1})
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 10 {
		es := catalogue()
		r.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
		g := New()
		for _, e := range es {
			if err := g.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		g.Remove(es[0].ID)
		if err := g.Add(es[0]); err != nil {
			t.Fatal(err)
		}
		for _, c := range rankingCases {
			if got := search(t, g, c.query, SearchOptions{Limit: -1}); !slices.Equal(got, want[c.query]) {
				t.Fatalf("order %d, %q: %q, want %q", i, c.query, got, want[c.query])
			}
		}
	}
}

func TestRegistryFilters(t *testing.T) {
	g := newCatalogue(t)
	tests := []struct {
		name  string
		query string
		opts  SearchOptions
		want  []string
	}{
		{"capability only, by id", "", SearchOptions{Capabilities: []string{"ticketing"}}, []string{"activity-booking"}},
		{"capability spelled as a handoff tool", "", SearchOptions{Capabilities: []string{"handoff_to_ticketing"}}, []string{"activity-booking"}},
		{"capability in other words", " ", SearchOptions{Capabilities: []string{"Search Flight"}}, []string{"flight-booking"}},
		{"all capabilities must match", "", SearchOptions{Capabilities: []string{"lookup_order", "issue_refunds"}}, []string{"refunds"}},
		{"no entry has both", "", SearchOptions{Capabilities: []string{"lookup_order", "search_flights"}}, nil},
		{"blank capability ignored", "", SearchOptions{Capabilities: []string{"  ", "the"}, Tags: []string{"finance"}}, []string{"expense-tracker"}},
		{"tag filter", "", SearchOptions{Tags: []string{"Payments"}}, []string{"billing-agent", "refunds"}},
		{"tags all match", "", SearchOptions{Tags: []string{"support", "payments"}, Kind: KindSwarm}, []string{"refunds"}},
		{"kind", "", SearchOptions{Kind: KindAgent, Limit: 3}, []string{"billing-agent", "expense-tracker", "security-auditor"}},
		{"query with kind", "support request", SearchOptions{Kind: KindAgent, Limit: 1}, []string{"tech-support"}},
		{"query with tag", "book", SearchOptions{Tags: []string{"travel"}, Limit: -1},
			[]string{"flight-booking", "travel-planner", "activity-booking", "hotel-booking"}},
		{"query with capability", "booking", SearchOptions{Capabilities: []string{"hotel_booking"}}, []string{"travel-planner"}},
		{"allow", "book", SearchOptions{Allow: func(id string) bool { return id != "flight-booking" && id != "activity-booking" }, Limit: 2},
			[]string{"travel-planner", "hotel-booking"}},
		{"allow nothing", "", SearchOptions{Allow: func(string) bool { return false }}, nil},
		{"no match", "quantum chromodynamics", SearchOptions{}, nil},
		{"stop words only", "what is the", SearchOptions{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := search(t, g, tt.query, tt.opts)
			if !slices.Equal(got, tt.want) {
				t.Errorf("%q %+v: %q, want %q", tt.query, tt.opts, got, tt.want)
			}
		})
	}
}

func TestRegistryLimit(t *testing.T) {
	g := newCatalogue(t)
	n := len(catalogue())
	if got := search(t, g, "", SearchOptions{}); len(got) != DefaultLimit {
		t.Errorf("default limit: %d hits", len(got))
	}
	all := search(t, g, "", SearchOptions{Limit: -1})
	if len(all) != n || !slices.IsSorted(all) {
		t.Errorf("no limit: %q", all)
	}
	if got := search(t, g, "", SearchOptions{Limit: 2}); !slices.Equal(got, all[:2]) {
		t.Errorf("limit 2: %q", got)
	}
	// "book" matches more entries than the default limit would cut.
	full := search(t, g, "travel booking", SearchOptions{Limit: -1})
	if got := search(t, g, "travel booking", SearchOptions{Limit: 3}); !slices.Equal(got, full[:3]) {
		t.Errorf("limited ranking %q is not the head of %q", got, full)
	}
}

func TestRegistryScoresAndCopies(t *testing.T) {
	g := newCatalogue(t)
	hits, _ := g.Search(context.Background(), "flight", SearchOptions{})
	if len(hits) == 0 || hits[0].Score <= 0 {
		t.Fatalf("hits %v", hits)
	}
	// A caller scribbling on results does not change the registry.
	hits[0].Entry.Capabilities[0] = "scribbled"
	hits[0].Entry.InputSchema[0] = '!'
	e, _ := g.Get(hits[0].Entry.ID)
	if slices.Contains(e.Capabilities, "scribbled") || !json.Valid(e.InputSchema) {
		t.Fatal("a hit shares memory with the registry")
	}
	e.Tags[0] = "scribbled"
	if l := g.List(); slices.ContainsFunc(l, func(e Entry) bool { return slices.Contains(e.Tags, "scribbled") }) {
		t.Fatal("Get shares memory with the registry")
	}
	listed, _ := g.Search(context.Background(), "", SearchOptions{Limit: 1})
	if listed[0].Score != 0 {
		t.Errorf("listing has score %v", listed[0].Score)
	}
	// And an added entry is copied in.
	in := Entry{ID: "x", Kind: KindAgent, Tags: []string{"before"}}
	_ = g.Add(in)
	in.Tags[0] = "after"
	if got := search(t, g, "", SearchOptions{Tags: []string{"before"}}); !slices.Equal(got, []string{"x"}) {
		t.Errorf("Add keeps the caller's slice: %q", got)
	}
}

func TestRegistryWrites(t *testing.T) {
	g := New()
	ctx := context.Background()
	a := Entry{ID: "a", Kind: KindAgent, Description: "first version about apples"}
	if err := g.Add(a); err != nil {
		t.Fatal(err)
	}
	if err := g.Add(a); !errors.Is(err, ErrDuplicate) {
		t.Errorf("Add twice: %v", err)
	}
	// An Add with one bad entry adds none of them.
	if err := g.Add(Entry{ID: "b", Kind: KindAgent}, a); !errors.Is(err, ErrDuplicate) {
		t.Errorf("Add with a taken id: %v", err)
	}
	if _, ok := g.Get("b"); ok {
		t.Error("a failed Add added an entry")
	}
	if err := g.Put(Entry{ID: "b", Kind: KindAgent}, Entry{ID: "b", Kind: KindSwarm}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("Put with an id twice: %v", err)
	}
	if got := search(t, g, "apples", SearchOptions{}); !slices.Equal(got, []string{"a"}) {
		t.Errorf("before replace: %q", got)
	}
	// Put replaces, and the index follows.
	if err := g.Put(Entry{ID: "a", Kind: KindAgent, Description: "second version about pears"}); err != nil {
		t.Fatal(err)
	}
	if got := search(t, g, "apples", SearchOptions{}); len(got) != 0 {
		t.Errorf("replaced text still found: %q", got)
	}
	if got := search(t, g, "pears", SearchOptions{}); !slices.Equal(got, []string{"a"}) {
		t.Errorf("new text not found: %q", got)
	}
	if !g.Remove("a") || g.Remove("a") {
		t.Error("Remove reports wrongly")
	}
	if got := search(t, g, "pears", SearchOptions{}); len(got) != 0 {
		t.Errorf("removed entry found: %q", got)
	}
	if g.Len() != 0 || len(g.List()) != 0 {
		t.Error("registry not empty")
	}
	if hits, err := g.Search(ctx, "", SearchOptions{}); err != nil || len(hits) != 0 {
		t.Errorf("empty registry: %v %v", hits, err)
	}
}

func TestRegistryInvalid(t *testing.T) {
	g := New()
	for _, e := range []Entry{
		{Kind: KindSwarm},
		{ID: "  ", Kind: KindSwarm},
		{ID: "x"},
		{ID: "x", Kind: "team"},
		{ID: "x", Kind: KindSwarm, InputSchema: json.RawMessage(`{"type":`)},
		{ID: "x", Kind: KindSwarm, ResultSchema: json.RawMessage(`nope`)},
	} {
		if err := g.Put(e); !errors.Is(err, ErrInvalid) {
			t.Errorf("Put(%+v) = %v, want ErrInvalid", e, err)
		}
	}
	if g.Len() != 0 {
		t.Error("an invalid entry was registered")
	}
	if _, err := g.Search(context.Background(), "x", SearchOptions{Kind: "swarms"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown kind: %v", err)
	}
}

// failingRanker fails to build its index, or to search.
type failingRanker struct{ indexErr, searchErr error }

func (f failingRanker) Index(context.Context, []Entry) (Index, error) {
	if f.indexErr != nil {
		return nil, f.indexErr
	}
	return f, nil
}

func (f failingRanker) Search(context.Context, string) ([]Match, error) { return nil, f.searchErr }

func TestRegistryRankerErrors(t *testing.T) {
	boom := errors.New("embedding service down")
	g := New(WithRanker(failingRanker{indexErr: boom}))
	_ = g.Add(catalogue()...)
	if _, err := g.Search(context.Background(), "flight", SearchOptions{}); !errors.Is(err, boom) {
		t.Errorf("index error: %v", err)
	}
	// Nothing is lost: the entries are still there.
	if g.Len() != len(catalogue()) {
		t.Error("entries lost after a ranker error")
	}
	g = New(WithRanker(failingRanker{searchErr: boom}))
	_ = g.Add(catalogue()...)
	if _, err := g.Search(context.Background(), "flight", SearchOptions{}); !errors.Is(err, boom) {
		t.Errorf("search error: %v", err)
	}
	if hits, err := g.Search(context.Background(), "", SearchOptions{Limit: -1}); err != nil || len(hits) != len(catalogue()) {
		t.Errorf("listing with a failing ranker: %d hits, %v", len(hits), err)
	}
}

// blockingRanker blocks in Index until released.
type blockingRanker struct {
	started, release chan struct{}
}

func (b blockingRanker) Index(ctx context.Context, es []Entry) (Index, error) {
	b.started <- struct{}{}
	<-b.release
	return BM25{}.Index(ctx, es)
}

// TestRegistryBuildDoesNotBlock checks that writers proceed and waiting
// searches give up on their context while an index is being built.
func TestRegistryBuildDoesNotBlock(t *testing.T) {
	br := blockingRanker{started: make(chan struct{}), release: make(chan struct{})}
	g := New(WithRanker(br))
	_ = g.Add(catalogue()...)
	first := make(chan error)
	go func() {
		_, err := g.Search(context.Background(), "flight", SearchOptions{})
		first <- err
	}()
	<-br.started
	// The build is under way: writes and reads that need no index proceed.
	if err := g.Put(Entry{ID: "late", Kind: KindAgent, Description: "arrived during a build"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Get("late"); !ok || g.Len() != len(catalogue())+1 {
		t.Fatal("write lost during a build")
	}
	// A search waiting for the build gives up when its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error)
	go func() {
		_, err := g.Search(ctx, "flight", SearchOptions{})
		second <- err
	}()
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Errorf("waiting search: %v", err)
	}
	close(br.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The next search sees the write made during the build.
	go func() { <-br.started }() // the rebuild announces itself once more
	hits, err := g.Search(context.Background(), "arrived", SearchOptions{})
	if err != nil || len(hits) != 1 || hits[0].Entry.ID != "late" {
		t.Errorf("after build: %v %v", ids(hits), err)
	}
}

// TestRegistryConcurrent mixes writers and searchers; run with -race.
func TestRegistryConcurrent(t *testing.T) {
	g := newCatalogue(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				id := fmt.Sprintf("w%d-%d", w, i%10)
				e := Entry{ID: id, Kind: KindAgent, Description: fmt.Sprintf("temporary worker %d", i), Tags: []string{"temp"}}
				if err := g.Put(e); err != nil {
					errs <- err
					return
				}
				if i%3 == 0 {
					g.Remove(id)
				}
			}
		})
	}
	for s := range 4 {
		wg.Go(func() {
			for i := range 100 {
				c := rankingCases[(s+i)%len(rankingCases)]
				hits, err := g.Search(ctx, c.query, SearchOptions{Limit: 1})
				if err != nil {
					errs <- err
					return
				}
				// Writers only add "temporary worker" entries, which never
				// outrank the catalogue's best hit for these queries.
				if len(hits) != 1 || hits[0].Entry.ID != c.top {
					errs <- fmt.Errorf("%q: %v", c.query, ids(hits))
					return
				}
				_ = g.List()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Read-your-writes: the final state is what the last writes left.
	want := 0
	for range 4 {
		for j := range 10 {
			// The last write to w*-j was at i = 90+j; removed if i%3 == 0.
			if (90+j)%3 != 0 {
				want++
			}
		}
	}
	if got := search(t, g, "temporary worker", SearchOptions{Limit: -1}); len(got) != want {
		t.Errorf("%d temporary entries found, want %d", len(got), want)
	}
}

// TestBest checks the bounded selection against a full sort, with many
// tied scores, filtered and unscored matches.
func TestBest(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 200 {
		n := r.IntN(200)
		ms := make([]Match, n)
		for i := range ms {
			ms[i] = Match{Doc: i, Score: float64(r.IntN(8))} // ties, and zeros
		}
		r.Shuffle(n, func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		keep := func(d int) bool { return d%5 != 0 }
		var want []Match
		for _, m := range ms {
			if m.Score > 0 && keep(m.Doc) {
				want = append(want, m)
			}
		}
		slices.SortFunc(want, compareMatches)
		for _, limit := range []int{-1, 1, 3, 10, 64, 65, 500} {
			got := best(slices.Clone(ms), limit, keep)
			w := want
			if limit >= 0 && len(w) > limit {
				w = w[:limit]
			}
			if !slices.Equal(got, w) {
				t.Fatalf("round %d, limit %d: got %v, want %v", round, limit, got, w)
			}
		}
	}
}

// TestEntryJSON pins the wire form entries are served in.
func TestEntryJSON(t *testing.T) {
	e := Entry{
		ID: "refunds", Kind: KindSwarm, Description: "Issues refunds.",
		InputSchema:  json.RawMessage(`{"type":"string"}`),
		Capabilities: []string{"issue_refund"}, Tags: []string{"support"}, Customizable: true,
	}
	b, err := json.Marshal(Hit{Entry: e, Score: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"entry":{"id":"refunds","kind":"swarm","description":"Issues refunds.","input_schema":{"type":"string"},` +
		`"capabilities":["issue_refund"],"tags":["support"],"customizable":true},"score":1.5}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back Hit
	if err := json.Unmarshal(b, &back); err != nil || back.Entry.ID != e.ID || string(back.Entry.InputSchema) != string(e.InputSchema) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

// TestHugeQuery checks that a very long query is answered, not stalled on:
// a model may paste a whole document into a search.
func TestHugeQuery(t *testing.T) {
	g := newCatalogue(t)
	var b strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&b, "word%d ", i)
	}
	b.WriteString("refund my order")
	hits, err := g.Search(context.Background(), b.String(), SearchOptions{Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].Entry.ID != "refunds" {
		t.Errorf("huge query: %v %v", ids(hits), err)
	}
}
