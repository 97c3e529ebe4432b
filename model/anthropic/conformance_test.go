package anthropic_test

import (
	"net/http"
	"testing"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/anthropic"
	"github.com/swarmrt/swarm/model/modeltest"
)

func newModel(t *testing.T) func(string, *http.Client) model.Model {
	return func(baseURL string, client *http.Client) model.Model {
		m, err := anthropic.New(anthropic.WithBaseURL(baseURL), anthropic.WithHTTPClient(client), anthropic.WithAPIKey("sk-ant-test"), anthropic.WithModel("test-model"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Config{Wire: modeltest.Anthropic, New: newModel(t), ToolErrors: true, CacheWrites: true, Parts: &modeltest.Parts{},
		ContextTooLong: modeltest.Fault{Status: 400, Code: "invalid_request_error", Message: "prompt is too long: 215000 tokens > 200000 maximum"}})
}
