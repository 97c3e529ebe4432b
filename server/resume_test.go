package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/swarmtest"
)

// pauser pauses n times, then answers "done".
func pauser(n int) scripted.Script {
	var steps []scripted.Step
	for i := range n {
		steps = append(steps, scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": fmt.Sprintf("question %d", i+1)})))
	}
	return scripted.Script{"pauser": append(steps, scripted.Text("done"))}
}

// serveWorking serves a runtime whose node works (claims runnable runs) as
// swarm serve's does.
func serveWorking(t *testing.T, script scripted.Script) (client, *swarm.Runtime) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(); st.Close() })
	if err := rt.Register(swarm.Define[string, string]("pauser", "pauses", func(string) swarm.Spec { return swarm.Spec{MaxTurns: 100} })); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	worked := make(chan error, 1)
	go func() { worked <- rt.Work(wctx, swarm.WorkOptions{DrainTimeout: -1}) }()
	t.Cleanup(func() {
		stop()
		<-worked
	})
	ts, _ := serveRuntime(t, rt, Options{})
	return client{t: t, base: ts.URL}, rt
}

// TestResumeWhileWorking resumes a run 25 times over HTTP while the node's
// work loop also claims runnable runs: every resume is answered 202 once,
// and the run reaches its next pause at once (not after a lease expires).
func TestResumeWhileWorking(t *testing.T) {
	const n = 25
	c, rt := serveWorking(t, pauser(n))
	st := c.start("pauser", `{"input": "go"}`)
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		now, err := rt.Wait(ctx, st.ID)
		cancel()
		if err != nil {
			t.Fatalf("pause %d: the run did not pause in time: %v", i+1, err)
		}
		if now.State != swarm.StatePaused || now.Reason != fmt.Sprintf("question %d", i+1) {
			t.Fatalf("pause %d: %+v", i+1, now)
		}
		if res := c.post("/v1/runs/"+st.ID+"/resume", `{"message": "yes"}`); res.status != http.StatusAccepted {
			t.Fatalf("resume %d: %d %s", i+1, res.status, strings.TrimSpace(string(res.body)))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	end, err := rt.Wait(ctx, st.ID)
	if err != nil || end.State != swarm.StateCompleted {
		t.Fatalf("end: %+v %v", end, err)
	}
}

// TestResumeNamesItsPause: a resume names the pause it answers. Of two
// clients answering the same pause exactly one wins; the other is refused
// with 409 and its answer never reaches the run's next pause.
func TestResumeNamesItsPause(t *testing.T) {
	c, rt := serveWorking(t, pauser(3))
	st := c.start("pauser", `{"input": "go"}`)
	waitPaused := func(reason string) swarm.Status {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		now, err := rt.Wait(ctx, st.ID)
		if err != nil || now.State != swarm.StatePaused || now.Reason != reason {
			t.Fatalf("want paused with %q: %+v %v", reason, now, err)
		}
		return now
	}
	first := waitPaused("question 1")
	var got RunStatus
	c.get("/v1/runs/"+st.ID).decode(t, &got)
	if got.Pause == 0 || got.Pause != first.Pause || got.Pause != got.LastSeq {
		t.Fatalf("status names no pause: %+v", got)
	}
	// Two clients answer pause 1 at once.
	codes := make(chan int, 2)
	for _, answer := range []string{"alice", "bob"} {
		go func() {
			codes <- c.post("/v1/runs/"+st.ID+"/resume", fmt.Sprintf(`{"message": %q, "pause": %d}`, answer, first.Pause)).status
		}()
	}
	a, b := <-codes, <-codes
	if min(a, b) != http.StatusAccepted || max(a, b) != http.StatusConflict {
		t.Fatalf("two answers to one pause: %d and %d, want one 202 and one 409", a, b)
	}
	second := waitPaused("question 2")
	// A late answer to pause 1 is refused, and pause 2 still waits.
	res := c.post("/v1/runs/"+st.ID+"/resume", fmt.Sprintf(`{"message": "late", "pause": %d}`, first.Pause))
	if res.status != http.StatusConflict || res.errorCode() != "pause_not_current" {
		t.Fatalf("late answer: %d %s", res.status, res.body)
	}
	if now := waitPaused("question 2"); now.Pause != second.Pause || now.LastSeq != second.LastSeq {
		t.Fatalf("the late answer applied to the next pause: %+v", now)
	}
	evs := swarmtest.Events(t, rt, st.ID)
	resumed := 0
	for _, ev := range evs {
		if ev.Type == swarm.EventResumed {
			resumed++
			if ev.Message == "late" {
				t.Fatal("the late answer was recorded")
			}
		}
	}
	if resumed != 1 {
		t.Fatalf("%d resumes recorded, want 1", resumed)
	}
	// Naming the current pause works; so does naming none (compatibility).
	if res := c.post("/v1/runs/"+st.ID+"/resume", fmt.Sprintf(`{"message": "yes", "pause": %d}`, second.Pause)); res.status != http.StatusAccepted {
		t.Fatalf("answer to the current pause: %d %s", res.status, res.body)
	}
	waitPaused("question 3")
	if res := c.post("/v1/runs/"+st.ID+"/resume", `{"message": "yes"}`); res.status != http.StatusAccepted {
		t.Fatalf("answer without a pause: %d %s", res.status, res.body)
	}
	// Go: a pause that is not current is ErrPauseNotCurrent.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if end, err := rt.Wait(ctx, st.ID); err != nil || end.State != swarm.StateCompleted {
		t.Fatalf("end: %+v %v", end, err)
	}
	if err := rt.Resume(ctx, st.ID, "again", swarm.AtPause(second.Pause)); !errors.Is(err, swarm.ErrPauseNotCurrent) || !errors.Is(err, swarm.ErrInvalidState) {
		t.Fatalf("Resume at an old pause: %v", err)
	}
}
