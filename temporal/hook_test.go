package temporal_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/temporal"
)

// With a Hook as its Config.Engine, a runtime starts, waits on, resumes,
// stops and follows a swarm's runs through the same swarm API, while
// Temporal runs them; its own workers never claim them; a swarm the hook
// does not name runs on Swarm's own engine.
func TestHookSameAPI(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	h := temporal.NewHook(temporal.Options{Client: c, TaskQueue: "hook-test"}, "ask")
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Engine: h, Model: scripted.New(scripted.Script{"local": {scripted.Text("here")}}), PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ask := swarm.Define[string, string]("ask", "asks", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(awaiter{})}
	})
	local := swarm.Define[string, string]("local", "runs here", nil)
	if err := rt.Register(ask, local); err != nil {
		t.Fatal(err)
	}
	if h.Engine() == nil {
		t.Fatal("swarm.New did not bind the hook")
	}
	ts.NewWorker("hook-test", h.Engine().Register)
	ctx := ctxFor(t)

	run, err := ask.Start(ctx, rt, "x", swarm.WithID("h1"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The contract with the runtime (seam.HeldWaiting): the waiting
	// run's row stays running, held for good, with its question as
	// reason, which every reader of the store shows as paused.
	if r, err := rt.Store().Get(ctx, "h1"); err != nil || !seam.HeldWaiting(r) {
		t.Fatalf("row of the waiting run: %+v, %v", r, err)
	}
	p, ok := res.(swarm.Paused)
	if !ok || p.Reason != "ok?" {
		t.Fatalf("wait: %#v", res)
	}
	// The runtime's own engine leaves the run to Temporal.
	if ids, err := rt.Recover(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("recover took %v (%v)", ids, err)
	}
	if err := rt.Drive(ctx, "h1"); !errors.Is(err, swarm.ErrInvalidState) {
		t.Fatalf("drive: %v", err)
	}
	if err := run.Resume(ctx, "yes", swarm.AtPause(p.Pause)); err != nil {
		t.Fatal(err)
	}
	res, err = run.Wait(ctx)
	if c, ok := res.(swarm.Completed[string]); err != nil || !ok || c.Output != "yes 7" {
		t.Fatalf("wait after resume: %#v, %v", res, err)
	}
	var types []swarm.EventType
	for ev, err := range run.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	for _, want := range []swarm.EventType{swarm.EventStarted, swarm.EventPaused, swarm.EventResumed, swarm.EventCompleted} {
		if !slices.Contains(types, want) {
			t.Errorf("events %v lack %s", types, want)
		}
	}
	if err := run.Resume(ctx, "again"); !errors.Is(err, swarm.ErrInvalidState) {
		t.Errorf("resume of a completed run: %v", err)
	}

	stopped, err := ask.Start(ctx, rt, "y")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stopped.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := stopped.Stop(ctx, "enough"); err != nil {
		t.Fatal(err)
	}
	res, err = stopped.Wait(ctx)
	if s, ok := res.(swarm.Stopped); err != nil || !ok || s.Reason != "enough" {
		t.Fatalf("wait after stop: %#v, %v", res, err)
	}
	if out, err := h.Engine().Wait(ctx, stopped.ID()); err != nil || out.Status != "stopped" || out.Reason != "enough" {
		t.Errorf("workflow of the stopped run: %+v, %v", out, err)
	}

	res, _, err = local.Run(ctx, rt, "hi")
	if c, ok := res.(swarm.Completed[string]); err != nil || !ok || c.Output != "here" {
		t.Fatalf("local swarm: %#v, %v", res, err)
	}
	if _, err := c.DescribeWorkflowExecution(ctx, "local", ""); err == nil {
		t.Error("the local swarm ran on Temporal")
	}
	if r, err := rt.Store().Get(ctx, "h1"); err != nil || r.State != store.Completed {
		t.Errorf("row of h1: %+v, %v", r, err)
	}
}

// A kind of run the engine refuses is a mistake in the definition
// (swarm.ErrInvalid, a 400 under swarm serve), and nothing is stored.
func TestHookRefusesAsInvalid(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	h := temporal.NewHook(temporal.Options{Client: ts.GetDefaultClient(), TaskQueue: "hook-refused"})
	st := memory.New()
	rt, err := swarm.New(swarm.Config{Store: st, Engine: h, Model: scripted.New(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	child := swarm.Define[string, string]("child", "answers", nil)
	lead := swarm.Define[string, string]("lead", "hands off to a swarm", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Hand off.", Handoffs: []swarm.Handoff{swarm.ToSwarm(child)}}
	})
	if err := rt.Register(lead, child); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	_, err = rt.Start(ctx, "lead", []byte(`"x"`))
	if !errors.Is(err, swarm.ErrInvalid) || !errors.Is(err, temporal.ErrUnsupported) {
		t.Fatalf("start: %v", err)
	}
	if runs, _ := st.List(ctx, store.Filter{}); len(runs) != 0 {
		t.Fatalf("a refused run stored %d rows", len(runs))
	}
	// A conversation reads its messages and shared context from values
	// of the context that do not cross into activities: refused by the
	// engine's Check and at its start through the conversation API,
	// before anything is stored, rather than half-run.
	desk := conversation.Define("desk", "answers", conversation.Spec[struct{}]{Queen: &swarm.Agent{Name: "queen", Instructions: "Answer."}})
	if err := rt.Register(desk); err != nil {
		t.Fatal(err)
	}
	if err := h.Engine().Check("desk", nil); !errors.Is(err, temporal.ErrUnsupported) {
		t.Fatalf("check of a conversation: %v", err)
	}
	if _, err := desk.Start(ctx, rt); !errors.Is(err, swarm.ErrInvalid) || !errors.Is(err, temporal.ErrUnsupported) {
		t.Fatalf("start of a conversation: %v", err)
	}
	if runs, _ := st.List(ctx, store.Filter{}); len(runs) != 0 {
		t.Fatalf("a refused conversation stored %d rows", len(runs))
	}
}
