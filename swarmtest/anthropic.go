package swarmtest

import (
	"testing"

	"github.com/swarmrt/swarm/model/anthropic"
	"github.com/swarmrt/swarm/model/modeltest"
	"github.com/swarmrt/swarm/model/scripted"
)

// NewAnthropicServer starts a fake Anthropic Messages API server (JSON and
// SSE) playing script, like [NewOpenAIServer]; it is closed when the test
// ends. Use [FakeServer.Anthropic] for a provider calling it.
func NewAnthropicServer(t testing.TB, script scripted.Script) *FakeServer {
	return newFakeServer(t, modeltest.Anthropic, script)
}

// NewOpenAIResponsesServer starts a fake OpenAI Responses API server
// playing script. Use [FakeServer.OpenAI] with
// openai.WithAPI(openai.Responses) for a provider calling it.
func NewOpenAIResponsesServer(t testing.TB, script scripted.Script) *FakeServer {
	return newFakeServer(t, modeltest.OpenAIResponses, script)
}

// Anthropic returns an Anthropic provider calling s with the model name
// "fake", sending agent headers; opts are applied last.
func (s *FakeServer) Anthropic(t testing.TB, opts ...anthropic.Option) *anthropic.Model {
	t.Helper()
	m, err := anthropic.New(append([]anthropic.Option{anthropic.WithBaseURL(s.URL), anthropic.WithAPIKey("sk-ant-fake"), anthropic.WithModel("fake"), anthropic.WithAgentHeader()}, opts...)...)
	if err != nil {
		t.Fatalf("swarmtest: %v", err)
	}
	return m
}
