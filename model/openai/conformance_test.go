package openai_test

import (
	"net/http"
	"testing"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/modeltest"
	"github.com/swarmrt/swarm/model/openai"
)

func newModel(t *testing.T, opts ...openai.Option) func(string, *http.Client) model.Model {
	return func(baseURL string, client *http.Client) model.Model {
		m, err := openai.New(append([]openai.Option{openai.WithBaseURL(baseURL), openai.WithHTTPClient(client), openai.WithAPIKey("sk-test"), openai.WithModel("test-model")}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

var openAIContextTooLong = modeltest.Fault{Status: 400, Code: "context_length_exceeded",
	Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."}

func TestConformanceChat(t *testing.T) {
	modeltest.Run(t, modeltest.Config{Wire: modeltest.OpenAIChat, New: newModel(t), StructuredOutput: true, ContextTooLong: openAIContextTooLong,
		Parts: &modeltest.Parts{Audio: true, ToolMediaAsUser: true}})
}

func TestConformanceResponses(t *testing.T) {
	modeltest.Run(t, modeltest.Config{Wire: modeltest.OpenAIResponses, New: newModel(t, openai.WithAPI(openai.Responses)), StructuredOutput: true, ContextTooLong: openAIContextTooLong,
		Parts: &modeltest.Parts{}})
}

// A compatible server (as vLLM or Ollama) without structured output, and
// the error message such servers give for a long prompt.
func TestConformanceCompatible(t *testing.T) {
	modeltest.Run(t, modeltest.Config{Wire: modeltest.OpenAIChat, New: newModel(t, openai.WithProvider("vllm"), openai.WithStructuredOutput(false)),
		ContextTooLong: modeltest.Fault{Status: 400, Message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}})
}
