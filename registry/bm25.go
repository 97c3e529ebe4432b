package registry

import (
	"context"
	"math"
	"slices"
	"sync"
)

// BM25 is the default [Ranker]: keyword search with BM25F, the field-weighted
// form of Okapi BM25, over an entry's id, description, capabilities and
// tags. Queries and entries are split into terms the same way (case,
// snake_case, camelCase and kebab-case splitting, English stop words
// dropped, light stemming of plurals and -ing/-ed forms), so "book flights"
// matches an entry with the capability "flight_booking".
//
// For each query term t and entry d the field frequencies are combined
// into one pseudo-frequency
//
//	tf(t,d) = Σ_f w_f · tf_f(t,d) / (1 − b + b · len_f(d) / avglen_f)
//
// which is saturated and weighted by inverse document frequency:
//
//	score(d) = Σ_t idf(t) · tf(t,d) · (k1 + 1) / (k1 + tf(t,d))
//	idf(t)   = ln(1 + (N − n_t + 0.5) / (n_t + 0.5))
//
// A term repeated in the query counts once. The zero value is ready to
// use; its zero fields take the defaults.
type BM25 struct {
	// K1 controls term-frequency saturation; 0 means 1.2.
	K1 float64
	// B controls field-length normalisation, up to 1 (full); 0 means 0.75.
	B float64
	// Weights are the field weights; the zero value means
	// {ID: 2, Description: 1, Capabilities: 1.5, Tags: 1.5}.
	Weights FieldWeights
}

// FieldWeights weighs a term occurrence by the field it occurs in. A field
// with weight 0 is not searched.
type FieldWeights struct {
	// ID weighs terms of the entry's id ("flight-booking").
	ID float64
	// Description weighs terms of the entry's description.
	Description float64
	// Capabilities weighs terms of the entry's capability words.
	Capabilities float64
	// Tags weighs terms of the entry's tags.
	Tags float64
}

const numFields = 4

var defaultWeights = FieldWeights{ID: 2, Description: 1, Capabilities: 1.5, Tags: 1.5}

// posting is one entry that contains a term, with the term's whole,
// query-independent contribution to the entry's score.
type posting struct {
	doc   int32
	score float64
}

type bm25Index struct {
	n        int
	postings map[string][]posting
	acc      sync.Pool // *[]float64 of length n, all zero between uses
}

// Index builds a BM25F index over entries; see [Ranker].
func (m BM25) Index(ctx context.Context, entries []Entry) (Index, error) {
	k1, b, w := m.K1, m.B, m.Weights
	if k1 <= 0 {
		k1 = 1.2
	}
	if b <= 0 {
		b = 0.75
	}
	if w == (FieldWeights{}) {
		w = defaultWeights
	}
	weights := [numFields]float64{w.ID, w.Description, w.Capabilities, w.Tags}

	// First pass: term counts per entry and field, and field lengths.
	type termCounts struct {
		term string
		tf   [numFields]int32
	}
	docs := make([][]termCounts, len(entries))
	lens := make([][numFields]int32, len(entries))
	var total [numFields]float64
	df := map[string]int{}
	pos := map[string]int{} // term -> index in the current entry's counts
	var buf []string
	for d, e := range entries {
		if d%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		clear(pos)
		var counts []termCounts
		add := func(f int, text string) {
			buf = appendTerms(buf[:0], text)
			for _, t := range buf {
				i, ok := pos[t]
				if !ok {
					i = len(counts)
					pos[t] = i
					counts = append(counts, termCounts{term: t})
					df[t]++
				}
				counts[i].tf[f]++
				lens[d][f]++
			}
		}
		add(0, e.ID)
		add(1, e.Description)
		for _, c := range e.Capabilities {
			add(2, c)
		}
		for _, t := range e.Tags {
			add(3, t)
		}
		docs[d] = counts
		for f := range numFields {
			total[f] += float64(lens[d][f])
		}
	}

	// Second pass: each posting's score, which depends on the averages.
	n := float64(len(entries))
	var norm [numFields]float64 // b / avglen_f
	for f := range numFields {
		if total[f] > 0 {
			norm[f] = b * n / total[f]
		}
	}
	ix := &bm25Index{n: len(entries), postings: make(map[string][]posting, len(df))}
	for t, c := range df {
		ix.postings[t] = make([]posting, 0, c)
	}
	for d, counts := range docs {
		for _, c := range counts {
			var tf float64
			for f := range numFields {
				if c.tf[f] > 0 {
					tf += weights[f] * float64(c.tf[f]) / (1 - b + norm[f]*float64(lens[d][f]))
				}
			}
			if tf <= 0 {
				continue
			}
			nt := float64(df[c.term])
			idf := math.Log(1 + (n-nt+0.5)/(nt+0.5))
			ix.postings[c.term] = append(ix.postings[c.term], posting{
				doc:   int32(d),
				score: idf * tf * (k1 + 1) / (k1 + tf),
			})
		}
	}
	ix.acc.New = func() any {
		s := make([]float64, ix.n)
		return &s
	}
	return ix, nil
}

// Search returns the entries that contain at least one query term.
func (ix *bm25Index) Search(ctx context.Context, query string) ([]Match, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	qs := terms(query)
	if len(qs) == 0 || ix.n == 0 {
		return nil, nil
	}
	accp := ix.acc.Get().(*[]float64)
	acc := *accp
	slices.Sort(qs) // a term repeated in the query counts once
	qs = slices.Compact(qs)
	size := 0
	for _, t := range qs {
		size += len(ix.postings[t])
	}
	out := make([]Match, 0, min(size, ix.n))
	for _, t := range qs {
		for _, p := range ix.postings[t] {
			if acc[p.doc] == 0 {
				out = append(out, Match{Doc: int(p.doc)})
			}
			acc[p.doc] += p.score
		}
	}
	for i := range out {
		out[i].Score = acc[out[i].Doc]
		acc[out[i].Doc] = 0
	}
	ix.acc.Put(accp)
	return out, nil
}
