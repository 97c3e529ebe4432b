package openai

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"
)

// maxEmbedInputs bounds the texts of one embeddings request (the API's
// limit).
const maxEmbedInputs = 2048

// Embed returns the embeddings of texts, in order, from the provider's
// embeddings endpoint (POST /embeddings) with the embedding model (see
// [WithEmbeddingModel]): one request for up to 2,048 texts. Errors are
// classified like a model call's ([*model.Error]).
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	if len(texts) > maxEmbedInputs {
		return nil, fmt.Errorf("%s: embed %d texts: the limit of one request is %d", m.provider, len(texts), maxEmbedInputs)
	}
	res, err := m.embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: m.embedModel,
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
	})
	if err != nil {
		return nil, m.classify(ctx, m.embedModel, err)
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("%s: embeddings response: bad or repeated index %d", m.provider, d.Index)
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("%s: embeddings response lacks input %d of %d", m.provider, i, len(texts))
		}
	}
	return out, nil
}
