package server

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/swarmrt/swarm"
)

// TestFinishedRunHasNoPauseReason: the HTTP status of a run that paused and
// was resumed does not keep the pause's reason once the run completes.
func TestFinishedRunHasNoPauseReason(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	st := c.start("approval", `{"input": "book it"}`)
	if code, st := c.wait(st.ID); code != http.StatusOK || st.State != swarm.StatePaused || st.Reason != "approve?" {
		t.Fatalf("paused: %d %+v", code, st)
	}
	if res := c.post("/v1/runs/"+st.ID+"/resume", `{"message": "yes"}`); res.status != http.StatusAccepted {
		t.Fatalf("resume: %d %s", res.status, res.body)
	}
	code, st := c.wait(st.ID)
	if code != http.StatusOK || st.State != swarm.StateCompleted || st.Reason != "" {
		t.Fatalf("completed: %d state %s reason %q, want completed with no reason", code, st.State, st.Reason)
	}
	res := c.get("/v1/runs/" + st.ID)
	if res.status != http.StatusOK || bytes.Contains(res.body, []byte(`"reason"`)) {
		t.Errorf("GET of the completed run: %d %s, want no reason", res.status, res.body)
	}
}
