package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
)

// Embedder turns texts into vectors: an embeddings endpoint, such as
// the one [openai.Model.Embed] calls (package model/openai). Embed
// returns one vector per text, in order.
//
// [openai.Model.Embed]: https://pkg.go.dev/github.com/swarmrt/swarm/model/openai#Model.Embed
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// embed calls m's Embedder and checks its answer. In a run, the request
// first takes one model call from the run tree's budget pool (see
// swarm.Budget), as a model request does: a budget's ModelCalls bounds
// embedding requests too.
func (m *Memory) embed(ctx context.Context, texts []string) ([][]float32, error) {
	if swarm.RunID(ctx) != "" {
		root, err := m.value(ctx, "root")
		if err != nil {
			return nil, err
		}
		if _, err := m.Store.Spend(ctx, root, store.Pool{Calls: 1}); err != nil {
			return nil, fmt.Errorf("memory: count the embedding call in the budget of run %s: %w", root, err)
		}
	}
	vs, err := m.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("memory: embed: %w", err)
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("memory: embed: %d vectors for %d texts", len(vs), len(texts))
	}
	for _, v := range vs {
		if len(v) == 0 || len(v) > store.MaxMemoryDims {
			return nil, fmt.Errorf("memory: embed: a vector of %d dimensions (want 1 to %d)", len(v), store.MaxMemoryDims)
		}
	}
	return vs, nil
}

// embedText is what is embedded of an entry: its text and tags.
func embedText(e store.MemoryEntry) string {
	if len(e.Tags) == 0 {
		return e.Text
	}
	return e.Text + "\n" + strings.Join(e.Tags, ", ")
}
