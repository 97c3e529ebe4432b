package openai_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/openai"
)

// TestChatHeaders: a call that does not stream, which the provider sends
// without the SDK, carries what the SDK sends for the model's options: the
// key, the configured headers, the JSON content type and the path.
func TestChatHeaders(t *testing.T) {
	var mu sync.Mutex
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Clone(context.Background())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c1","model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`))
	}))
	defer srv.Close()
	m, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithAPIKey("sk-test"), openai.WithModel("m"),
		openai.WithHeader("OpenAI-Organization", "org-1"), openai.WithAgentHeader())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(t.Context(), &model.Request{Agent: "a", RunID: "r", Messages: []model.Message{{Role: model.RoleUser, Content: "hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "hi" || resp.Usage.InputTokens != 3 {
		t.Errorf("response %+v", resp)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, want := range map[string]string{
		"Authorization": "Bearer sk-test", "OpenAI-Organization": "org-1", "Content-Type": "application/json",
		"X-Swarm-Agent": "a", "X-Swarm-Run": "r",
	} {
		if v := got.Header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	if got.Method != http.MethodPost || got.URL.Path != "/v1/chat/completions" {
		t.Errorf("%s %s, want POST /v1/chat/completions", got.Method, got.URL.Path)
	}
}
