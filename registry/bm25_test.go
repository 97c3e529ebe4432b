package registry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// rankingCases are natural-language queries and the entry that must rank
// first for each in the catalogue.
var rankingCases = []struct{ query, top string }{
	{"book a flight to Lisbon", "flight-booking"},
	{"I need a hotel room in Tokyo for three nights", "hotel-booking"},
	{"buy concert tickets", "ticketing"},
	{"customer wants their money back for an order", "refunds"},
	{"route an incoming customer support request", "support-triage"},
	{"review my pull request", "code-review"},
	{"plan a multi-city trip itinerary", "travel-planner"},
	{"rent a car at the airport", "car-rental"},
	{"app crashes with an error message on login", "tech-support"},
	{"question about an invoice charge", "billing-agent"},
	{"scan dependencies for vulnerabilities", "security-auditor"},
	{"translate this text into Japanese", "translator"},
	{"organise a corporate team-building event", "event-planning"},
	{"meeting room for 20 attendees", "venue-booking"},
	{"track spending against a budget", "expense-tracker"},
	{"guided tours and excursions", "activity-booking"},
}

func searchAll(t testing.TB, ix Index, entries []Entry, q string) []string {
	t.Helper()
	ms, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ms, func(a, b Match) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return compareIDs(entries[a.Doc].ID, entries[b.Doc].ID)
	})
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = entries[m.Doc].ID
	}
	return ids
}

func compareIDs(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestBM25TopHits(t *testing.T) {
	entries := catalogue()
	ix, err := BM25{}.Index(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rankingCases {
		got := searchAll(t, ix, entries, c.query)
		if len(got) == 0 || got[0] != c.top {
			t.Errorf("%q: ranking %q, want %q first", c.query, got, c.top)
		}
	}
}

// TestBM25OrderIndependent checks that the order entries are indexed in
// changes neither scores nor rankings.
func TestBM25OrderIndependent(t *testing.T) {
	base := catalogue()
	ix, err := BM25{}.Index(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, c := range rankingCases {
		want[c.query] = searchAll(t, ix, base, c.query)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		shuffled := slices.Clone(base)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		ix, err := BM25{}.Index(context.Background(), shuffled)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rankingCases {
			if got := searchAll(t, ix, shuffled, c.query); !slices.Equal(got, want[c.query]) {
				t.Fatalf("shuffle %d, %q: ranking %q, want %q", i, c.query, got, want[c.query])
			}
		}
	}
}

// TestBM25Fields checks each field is searched on its own, and that a
// field's weight matters.
func TestBM25Fields(t *testing.T) {
	entries := catalogue()
	ix, _ := BM25{}.Index(context.Background(), entries)
	tests := []struct{ query, want string }{
		{"lodging", "hotel-booking"},       // only a tag
		{"ground transport", "car-rental"}, // only a tag, kebab-case
		{"seat picker", "flight-booking"},  // only a capability from a handoff
		{"purchase", "ticketing"},          // only a capability from a tool
		{"entertainment", "ticketing"},     // only a tag
		{"translator", "translator"},       // only the id
		{"knowledge base", "tech-support"}, // only a capability
		{"ATTENDEE", "venue-booking"},      // case and inflection
	}
	for _, tt := range tests {
		got := searchAll(t, ix, entries, tt.query)
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("%q: got %q, want only %q", tt.query, got, tt.want)
		}
	}

	// Two entries with the same term in different fields: the heavier
	// field wins, and flipping the weights flips the order.
	pair := []Entry{
		{ID: "a", Kind: KindAgent, Description: "handles invoices"},
		{ID: "b", Kind: KindAgent, Description: "handles things", Tags: []string{"invoices"}},
	}
	for _, tt := range []struct {
		w    FieldWeights
		want string
	}{
		{FieldWeights{Description: 1, Tags: 3}, "b"},
		{FieldWeights{Description: 3, Tags: 1}, "a"},
	} {
		ix, _ := BM25{Weights: tt.w}.Index(context.Background(), pair)
		if got := searchAll(t, ix, pair, "invoice"); len(got) != 2 || got[0] != tt.want {
			t.Errorf("weights %+v: got %q, want %q first", tt.w, got, tt.want)
		}
	}
}

// TestBM25Scoring checks the formula's properties on a controlled corpus:
// rarer terms weigh more, repeated terms saturate, longer fields dilute.
func TestBM25Scoring(t *testing.T) {
	entries := []Entry{
		{ID: "e1", Kind: KindAgent, Description: "alpha beta"},
		{ID: "e2", Kind: KindAgent, Description: "alpha gamma"},
		{ID: "e3", Kind: KindAgent, Description: "alpha alpha alpha alpha gamma"},
		{ID: "e4", Kind: KindAgent, Description: "alpha delta epsilon zeta eta theta iota kappa"},
	}
	ix, _ := BM25{}.Index(context.Background(), entries)
	score := func(q, id string) float64 {
		ms, _ := ix.Search(context.Background(), q)
		for _, m := range ms {
			if entries[m.Doc].ID == id {
				return m.Score
			}
		}
		return 0
	}
	if !(score("beta", "e1") > score("alpha", "e1")) {
		t.Error("a rare term does not outweigh a common one")
	}
	if s1, s3 := score("alpha", "e1"), score("alpha", "e3"); !(s3 > s1 && s3 < 2*s1) {
		t.Errorf("alpha: e3 (4 occurrences) scores %v against e1's %v; want more but saturated", s3, s1)
	}
	if !(score("alpha", "e1") > score("alpha", "e4")) {
		t.Error("a long description is not length-normalised")
	}
	if score("alpha alpha", "e1") != score("alpha", "e1") {
		t.Error("a repeated query term counts twice")
	}
	if got := score("beta gamma", "e1") + score("beta gamma", "e2"); got <= 0 {
		t.Error("no score for an either-or query")
	}
	if ms, _ := ix.Search(context.Background(), "omega"); len(ms) != 0 {
		t.Errorf("unknown term matched %v", ms)
	}
	if ms, _ := ix.Search(context.Background(), "the of and"); len(ms) != 0 {
		t.Errorf("stop words matched %v", ms)
	}
}

func TestBM25Empty(t *testing.T) {
	ix, err := BM25{}.Index(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := ix.Search(context.Background(), "anything"); err != nil || len(ms) != 0 {
		t.Errorf("empty index: %v, %v", ms, err)
	}
}

func TestBM25Context(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (BM25{}).Index(ctx, catalogue()); err == nil {
		t.Error("Index ignores a cancelled context")
	}
	ix, _ := BM25{}.Index(context.Background(), catalogue())
	if _, err := ix.Search(ctx, "flight"); err == nil {
		t.Error("Search ignores a cancelled context")
	}
}

// TestBM25ConcurrentSearch shares one index between goroutines, which share
// its pooled accumulators; run with -race.
func TestBM25ConcurrentSearch(t *testing.T) {
	entries := catalogue()
	ix, _ := BM25{}.Index(context.Background(), entries)
	done := make(chan error)
	for g := range 8 {
		go func() {
			for i := range 200 {
				c := rankingCases[(g+i)%len(rankingCases)]
				ms, err := ix.Search(context.Background(), c.query)
				if err != nil {
					done <- err
					return
				}
				best := slices.MaxFunc(ms, func(a, b Match) int {
					if a.Score < b.Score {
						return -1
					} else if a.Score > b.Score {
						return 1
					}
					return 0
				})
				if entries[best.Doc].ID != c.top {
					done <- fmt.Errorf("%q: %s first", c.query, entries[best.Doc].ID)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
