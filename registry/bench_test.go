package registry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchEntries returns n synthetic entries whose descriptions, capabilities
// and tags draw on a realistic vocabulary, so postings lists have the
// lengths a large catalogue would give them.
func benchEntries(n int) []Entry {
	var vocab []string
	for _, e := range catalogue() {
		vocab = append(vocab, strings.Fields(e.Description)...)
	}
	r := rand.New(rand.NewPCG(5, 6))
	word := func() string { return vocab[r.IntN(len(vocab))] }
	out := make([]Entry, n)
	for i := range out {
		desc := make([]string, 12+r.IntN(20))
		for j := range desc {
			desc[j] = word()
		}
		out[i] = Entry{
			ID:           fmt.Sprintf("%s-%s-%d", word(), word(), i),
			Kind:         KindSwarm,
			Description:  strings.Join(desc, " "),
			Capabilities: Capabilities([]string{"handoff_to_" + word()}, []string{word() + "_" + word(), word()}),
			Tags:         []string{word(), word()},
		}
	}
	return out
}

func benchRegistry(b *testing.B, n int) *Registry {
	g := New()
	if err := g.Add(benchEntries(n)...); err != nil {
		b.Fatal(err)
	}
	if _, err := g.Search(context.Background(), "warm", SearchOptions{}); err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkSearch1000 is a ranked search over 1,000 entries, index built.
func BenchmarkSearch1000(b *testing.B) {
	g := benchRegistry(b, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		hits, err := g.Search(ctx, "book flights and hotels for a team event in Tokyo", SearchOptions{})
		if err != nil || len(hits) == 0 {
			b.Fatal(len(hits), err)
		}
	}
}

// BenchmarkSearch1000Filtered adds a capability filter and an allow list.
func BenchmarkSearch1000Filtered(b *testing.B) {
	g := benchRegistry(b, 1000)
	ctx := context.Background()
	opts := SearchOptions{Tags: []string{"hotels"}, Allow: func(id string) bool { return !strings.HasPrefix(id, "z") }}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Search(ctx, "reserve rooms for guests", opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIndex1000 is the cost of the lazy rebuild after a change.
func BenchmarkIndex1000(b *testing.B) {
	g := benchRegistry(b, 1000)
	ctx := context.Background()
	e := Entry{ID: "changing", Kind: KindAgent}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e.Description = fmt.Sprint("version ", i)
		if err := g.Put(e); err != nil {
			b.Fatal(err)
		}
		if _, err := g.Search(ctx, "version", SearchOptions{Limit: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
