package workflow_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/server"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/workflow"
)

// A workflow is served over HTTP like any swarm: started, paused at its
// human node with the answer's schema, answered and completed.
func TestServedOverHTTP(t *testing.T) {
	double := workflow.Func("double", func(_ context.Context, s string) (string, error) { return s + s, nil })
	ask := workflow.Human[string, verdict]("approve", 0, func(s string) string { return "Keep " + s + "?" })
	def := workflow.Define("served", "doubles and asks", workflow.Then(double, ask))
	rt, _ := swarmtest.NewRuntime(t, nil, def)
	srv, err := server.New(rt, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	t.Cleanup(srv.CloseStreams)
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := call("POST", "/v1/swarms/served/runs", `{"id": "h1", "input": "ab"}`); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	code, body := call("GET", "/v1/runs/h1?wait=10s", "")
	if code != http.StatusOK || !strings.Contains(body, `"state":"paused"`) || !strings.Contains(body, `Keep abab?`) || !strings.Contains(body, `\"ok\"`) {
		t.Fatalf("status: %d %s, want paused at the question with its schema", code, body)
	}
	if code, body := call("POST", "/v1/runs/h1/resume", `{"message": "{\"ok\": true}"}`); code >= 300 {
		t.Fatalf("resume: %d %s", code, body)
	}
	code, body = call("GET", "/v1/runs/h1?wait=10s", "")
	if code != http.StatusOK || !strings.Contains(body, `"result":{"ok":true}`) {
		t.Fatalf("status: %d %s, want completed with the answer", code, body)
	}
}
