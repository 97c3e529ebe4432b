package server

import (
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/inspect"
)

// TestModelRequest: GET /v1/runs/{id}/requests/{key...} answers the
// request a model call received; an unknown step is 404, a step that is
// not a model call 400, an unknown run 404 (a run another token's swarm
// owns is 403: TestAuth).
func TestModelRequest(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	run := c.start("approval", `{"input": "a hut"}`)
	c.wait(run.ID)
	c.post("/v1/runs/"+run.ID+"/resume", `{"message": "yes"}`)
	if _, st := c.wait(run.ID); st.State != swarm.StateCompleted {
		t.Fatalf("run %+v", st)
	}
	var req inspect.Request
	res := c.get("/v1/runs/" + run.ID + "/requests/t2/model")
	res.decode(t, &req)
	if res.status != 200 || req.Agent != "approval" || req.Key != "t2/model" || req.Tokens.Estimate != "chars/4" || req.Check != inspect.Verified || req.Tokens.Total <= 0 {
		t.Fatalf("GET request: %d %s", res.status, res.body)
	}
	if len(req.Messages) != 3 || req.Messages[0].Content != "a hut" || !strings.Contains(req.Messages[2].Content, "yes") {
		t.Errorf("messages %+v", req.Messages)
	}
	if len(req.Tools) == 0 || len(req.Tokens.Tools) != len(req.Tools) {
		t.Errorf("tools %+v, tokens %+v", req.Tools, req.Tokens)
	}
	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/runs/" + run.ID + "/requests/t9/model", 404, "not_found"},
		{"/v1/runs/" + run.ID + "/requests/start", 400, "invalid_input"},
		{"/v1/runs/run_nope/requests/t1/model", 404, "not_found"},
	} {
		if res := c.get(tc.path); res.status != tc.status || res.errorCode() != tc.code {
			t.Errorf("GET %s: %d %s", tc.path, res.status, res.body)
		}
	}
}
