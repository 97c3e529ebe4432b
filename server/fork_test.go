package server

import (
	"net/http"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
)

// TestForkRun forks a completed run at its answer to a pause: the fork
// waits at that pause again, with the records before it reused.
func TestForkRun(t *testing.T) {
	a, err := auth.New([]auth.Token{{Name: "all", Secret: "all"}, {Name: "echo", Secret: "echo", Swarms: []string{"echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	ts, _, _ := newTest(t, Options{Auth: a})
	c := client{t: t, base: ts.URL, token: "all"}
	st := c.start("approval", `{"id": "ap-1", "input": "a hut"}`)
	if _, st = c.wait(st.ID); st.State != swarm.StatePaused {
		t.Fatalf("%s", st.State)
	}
	if res := c.post("/v1/runs/ap-1/resume", `{"message": "yes"}`); res.status != http.StatusAccepted {
		t.Fatalf("resume: %d %s", res.status, res.body)
	}
	if _, st = c.wait("ap-1"); st.State != swarm.StateCompleted {
		t.Fatalf("%s", st.State)
	}
	res := c.post("/v1/runs/ap-1/fork", `{"at": "t1/tool/call_approval_0_0", "id": "ap-2"}`)
	if res.status != http.StatusCreated || res.header.Get("Location") != "/v1/runs/ap-2" {
		t.Fatalf("fork: %d %s", res.status, res.body)
	}
	var fork RunStatus
	res.decode(t, &fork)
	if fork.ID != "ap-2" || fork.State != swarm.StatePaused || fork.Reason != "approve?" {
		t.Errorf("fork: %+v", fork.Status)
	}
	for _, tc := range []struct {
		body, token string
		status      int
		code        string
	}{
		{`{"at": "t7/model"}`, "all", http.StatusBadRequest, "invalid_input"},
		{`{"id": "ap-2"}`, "all", http.StatusConflict, "conflict"},
		{`{"id": "a b"}`, "all", http.StatusBadRequest, "bad_request"},
		{`{"input": 1, "extra": true}`, "all", http.StatusBadRequest, "bad_request"},
		{`{}`, "echo", http.StatusForbidden, "forbidden"},
	} {
		res := client{t: t, base: ts.URL, token: tc.token}.post("/v1/runs/ap-1/fork", tc.body)
		if res.status != tc.status || res.errorCode() != tc.code {
			t.Errorf("fork %s as %s: %d %s, want %d %s", tc.body, tc.token, res.status, res.errorCode(), tc.status, tc.code)
		}
	}
}
