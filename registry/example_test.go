package registry_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"

	"github.com/swarmrt/swarm/registry"
)

func Example() {
	reg := registry.New()
	err := reg.Add(
		registry.Entry{
			ID:          "flight-booking",
			Kind:        registry.KindSwarm,
			Description: "Searches airline flights and books seats.",
			// The caller knows the handoffs and tools; Capabilities
			// turns their names into searchable capability words.
			Capabilities: registry.Capabilities([]string{"handoff_to_seat_picker"}, []string{"searchFlights"}),
			Tags:         []string{"travel"},
			Customizable: true,
		},
		registry.Entry{
			ID:           "hotel-booking",
			Kind:         registry.KindSwarm,
			Description:  "Finds hotels and reserves rooms.",
			Capabilities: registry.Capabilities(nil, []string{"search_hotels"}),
			Tags:         []string{"travel"},
		},
		registry.Entry{ID: "refunds", Kind: registry.KindAgent, Description: "Issues refunds for orders."},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	hits, _ := reg.Search(ctx, "I need to book a flight to Lisbon", registry.SearchOptions{})
	for _, h := range hits {
		fmt.Printf("%s %v\n", h.Entry.ID, h.Entry.Capabilities)
	}

	// Filters alone, without a query, list matching entries by id; Allow
	// restricts what this caller may discover.
	hits, _ = reg.Search(ctx, "", registry.SearchOptions{
		Tags:  []string{"travel"},
		Allow: func(id string) bool { return id != "flight-booking" },
	})
	for _, h := range hits {
		fmt.Println(h.Entry.ID)
	}
	// Output:
	// flight-booking [search_flights seat_picker]
	// hotel-booking [search_hotels]
	// hotel-booking
}

// vectorRanker stands in for an embedding ranker: it maps each entry's text
// to a vector once, at Index, and each query to a vector at Search. A real
// one would call an embedding model in both places (with ctx) and cache the
// entry vectors by id and text across rebuilds.
type vectorRanker struct{}

type vectorIndex struct{ vecs [][]float64 }

func embed(text string) []float64 {
	v := make([]float64, 64)
	for _, w := range strings.Fields(strings.ToLower(text)) {
		for i := 0; i+3 <= len(w); i++ {
			h := fnv.New32a()
			h.Write([]byte(w[i : i+3]))
			v[h.Sum32()%64]++
		}
	}
	return v
}

func cosine(a, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot, na, nb = dot+a[i]*b[i], na+a[i]*a[i], nb+b[i]*b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

func (vectorRanker) Index(ctx context.Context, entries []registry.Entry) (registry.Index, error) {
	ix := &vectorIndex{}
	for _, e := range entries {
		text := e.ID + " " + e.Description + " " + strings.Join(e.Capabilities, " ") + " " + strings.Join(e.Tags, " ")
		ix.vecs = append(ix.vecs, embed(text))
	}
	return ix, nil
}

func (ix *vectorIndex) Search(ctx context.Context, query string) ([]registry.Match, error) {
	q := embed(query)
	var out []registry.Match
	for d, v := range ix.vecs {
		if s := cosine(q, v); s > 0.2 {
			out = append(out, registry.Match{Doc: d, Score: s})
		}
	}
	return out, nil
}

func ExampleWithRanker() {
	reg := registry.New(registry.WithRanker(vectorRanker{}))
	_ = reg.Add(
		registry.Entry{ID: "flight-booking", Kind: registry.KindSwarm, Description: "books airline flights"},
		registry.Entry{ID: "hotel-booking", Kind: registry.KindSwarm, Description: "reserves hotel rooms"},
	)
	hits, _ := reg.Search(context.Background(), "airline flight", registry.SearchOptions{Limit: 1})
	fmt.Println(hits[0].Entry.ID)
	// Output: flight-booking
}

func ExampleCapabilities() {
	fmt.Println(registry.Capabilities(
		[]string{"handoff_to_flight_booker", "transfer_to_sales"},
		[]string{"searchFlights", "search_flights", "issue-refund"},
	))
	// Output: [flight_booker issue_refund sales search_flights]
}
