package memory

import (
	"context"
	"fmt"
	"strings"

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

// embed calls e and checks its answer.
func embed(ctx context.Context, e Embedder, texts []string) ([][]float32, error) {
	vs, err := e.Embed(ctx, texts)
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
