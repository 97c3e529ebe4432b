package swarm_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
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

// TestLiveLeaseIsNotTakenOver drives a run on runtime A with a short lease
// while runtime B looks for expired runs over several lease periods: A's
// heartbeat keeps the lease live, so B claims nothing, A finishes, and the
// tool runs once. A live lease treated as expired fails the test at once.
func TestLiveLeaseIsNotTakenOver(t *testing.T) {
	// Generous enough that a loaded machine renews in time.
	const lease = time.Second
	ctx, cancel := context.WithCancelCause(swarmtest.Context(t))
	defer cancel(nil)
	var calls atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	work := swarm.NewTool("work", "Works a while", func(tctx context.Context, _ struct{}) (string, error) {
		if n := calls.Add(1); n > 1 {
			err := fmt.Errorf("work ran %d times: a live run was taken over", n)
			cancel(err)
			return "", err
		}
		close(started)
		select {
		case <-release:
			return "worked", nil
		case <-tctx.Done():
			return "", context.Cause(tctx)
		}
	})
	s := swarm.Define[string, string]("job", "", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{work}} })
	st := memory.New()
	m := scripted.New(scripted.Script{"job": {scripted.Tools(scripted.CallTool("work", nil)), scripted.Text("done")}})
	open := func(owner string) *swarm.Runtime {
		rt, err := swarm.New(swarm.Config{Store: st, Model: m, Owner: owner, Lease: lease, PollInterval: 10 * time.Millisecond, RetryBackoff: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		if err := rt.Register(s); err != nil {
			t.Fatal(err)
		}
		return rt
	}
	a, b := open("A"), open("B")
	run, err := s.Start(ctx, a, "go")
	if err != nil {
		t.Fatal(err)
	}
	swarmtest.Recv(t, ctx, started, "the tool call")
	// Over three lease periods, B finds nothing to take over.
	for i := range 9 {
		ids, err := b.Recover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 0 {
			t.Fatalf("B took over run %s while A held a live lease (check %d)", ids[0], i)
		}
		time.Sleep(lease / 3)
	}
	close(release)
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", context.Cause(ctx))
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
		t.Fatalf("result %#v, want completed", res)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("work ran %d times, want 1", n)
	}
	if lost := a.Metrics().LeasesLost; lost != 0 {
		t.Errorf("A lost %d leases", lost)
	}
}
