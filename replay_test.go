package swarm_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// TestReplayUsesRecordedToolResult pauses a run after a tool call and
// resumes it, which replays the journal: the recorded tool result is used
// and the tool never runs again. A tool that does run again stops the wait
// at once with a message, instead of leaving the run to hang until the
// test's deadline.
func TestReplayUsesRecordedToolResult(t *testing.T) {
	var calls atomic.Int32
	ctx, cancel := context.WithCancelCause(swarmtest.Context(t))
	defer cancel(nil)
	charge := swarm.NewTool("charge", "Charges a card", func(context.Context, struct {
		Amount int `json:"amount"`
	}) (string, error) {
		if n := calls.Add(1); n > 1 {
			err := fmt.Errorf("charge ran %d times: its recorded result was not replayed", n)
			cancel(err)
			return "", err
		}
		return "charged", nil
	})
	s := swarm.Define[string, string]("shop", "", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{charge}} })
	rt, m := newRuntime(t, scripted.Script{"shop": {
		scripted.Tools(scripted.CallTool("charge", map[string]any{"amount": 5})),
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "ship it?"})),
		scripted.Text("shipped"),
	}}, nil)
	run, err := s.Start(ctx, rt, "buy")
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatalf("wait for the pause: %v", errors.Join(err, context.Cause(ctx)))
	}
	if _, ok := res.(swarm.Paused); !ok {
		t.Fatalf("result %#v, want paused", res)
	}
	if err := run.Resume(ctx, "yes"); err != nil {
		t.Fatal(err)
	}
	res, err = run.Wait(ctx)
	if err != nil {
		t.Fatalf("wait after the resume: %v", context.Cause(ctx))
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "shipped" {
		t.Fatalf("result %#v, want completed with shipped", res)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("charge ran %d times, want 1", n)
	}
	swarmtest.AssertScriptConsumed(t, m, run.ID())
	swarmtest.AssertJournal(t, rt, run.ID())
}
