package server

import (
	"net/http"
	"slices"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/swarmtest"
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

// TestForkRunWithEdits forks a completed run with its answer to a pause
// edited: the fork reuses the edited answer instead of pausing again, runs
// on to its end, and its journal marks the record edited. Invalid edits
// are 400s.
func TestForkRunWithEdits(t *testing.T) {
	ts, _, rt := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	c.start("approval", `{"id": "ed-1", "input": "a hut"}`)
	c.wait("ed-1")
	if res := c.post("/v1/runs/ed-1/resume", `{"message": "yes"}`); res.status != http.StatusAccepted {
		t.Fatalf("resume: %d %s", res.status, res.body)
	}
	c.wait("ed-1")
	const answer = "t1/tool/call_approval_0_0"
	res := c.post("/v1/runs/ed-1/fork", `{"at": "`+answer+`", "id": "ed-2", "edits": [{"key": "`+answer+`", "output": "no, too dear"}]}`)
	if res.status != http.StatusCreated {
		t.Fatalf("fork: %d %s", res.status, res.body)
	}
	if _, st := c.wait("ed-2"); st.State != swarm.StateCompleted {
		t.Fatalf("fork: %s %s, want completed on the edited answer", st.State, st.Reason)
	}
	history, err := rt.History(swarmtest.Context(t), "ed-2", 0)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(history, func(ev swarm.Event) bool { return ev.Key == answer })
	if i < 0 || !history[i].Edited || history[i].Message != "no, too dear" {
		t.Errorf("the fork's answer: %+v, want the edited one", history)
	}
	for _, body := range []string{
		`{"edits": [{"key": "t9/tool/x", "output": "x"}]}`,
		`{"at": "t1/model", "edits": [{"key": "` + answer + `", "output": "x"}]}`,
		`{"edits": [{"key": "t1/model", "output": "x"}, {"key": "t1/model", "output": "y"}]}`,
	} {
		if res := c.post("/v1/runs/ed-1/fork", body); res.status != http.StatusBadRequest || res.errorCode() != "invalid_input" {
			t.Errorf("fork %s: %d %s, want 400 invalid_input", body, res.status, res.body)
		}
	}
	if res := c.post("/v1/runs/ed-1/fork", `{"edits": [{"key": "t1/model", "text": "x"}]}`); res.status != http.StatusBadRequest || res.errorCode() != "bad_request" {
		t.Errorf("fork with an unknown edit field: %d %s, want 400 bad_request", res.status, res.body)
	}
}
