package swarm_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/fork"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
)

// forkShop is a three-round swarm: charge, then ship, then answer. Each
// tool counts its executions.
func forkShop(t *testing.T) (*swarm.Runtime, *swarm.Swarm[string, string], *atomic.Int32, *atomic.Int32) {
	t.Helper()
	var charged, shipped atomic.Int32
	tool := func(name string, n *atomic.Int32) swarm.Tool {
		return swarm.NewTool(name, "counts", func(context.Context, struct{}) (string, error) {
			n.Add(1)
			return name + " done", nil
		})
	}
	s := swarm.Define[string, string]("shop", "", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Sell {{.Input}}.", Tools: []swarm.Tool{tool("charge", &charged), tool("ship", &shipped)}}
	})
	rt, _ := newRuntime(t, scripted.Script{"shop": {
		scripted.Tools(scripted.CallTool("charge", map[string]any{})),
		scripted.Tools(scripted.CallTool("ship", map[string]any{})),
		scripted.Text("sold"),
	}}, nil)
	if err := rt.Register(s); err != nil {
		t.Fatal(err)
	}
	return rt, s, &charged, &shipped
}

func journal(t *testing.T, rt *swarm.Runtime, id string) []store.Record {
	t.Helper()
	recs, err := rt.Store().Read(ctxT(t), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestForkReusesStepsBeforeTheForkPoint forks a completed run at its second
// round: the first round's model response and tool result are copied, not
// executed again (charge runs once in all), the second round runs again
// (ship twice), and the fork completes and names its origin.
func TestForkReusesStepsBeforeTheForkPoint(t *testing.T) {
	ctx := ctxT(t)
	rt, s, charged, shipped := forkShop(t)
	res, origin, err := s.Run(ctx, rt, "a lamp")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "sold" {
		t.Fatalf("origin: %#v", res)
	}
	orig := journal(t, rt, origin.ID())
	var responses []store.Record
	for _, rec := range orig {
		if rec.Type == string(swarm.EventModelResponse) {
			responses = append(responses, rec)
		}
	}
	if len(responses) != 3 {
		t.Fatalf("origin has %d model responses, want 3", len(responses))
	}
	at := responses[1].Key // the second round's model call
	id, err := rt.Fork(ctx, origin.ID(), at)
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != swarm.StateCompleted || string(st.Result) != `"sold"` {
		t.Fatalf("fork: %s %s %s", st.State, st.Result, st.Reason)
	}
	if c, s := charged.Load(), shipped.Load(); c != 1 || s != 2 {
		t.Errorf("charge ran %d times, ship %d: want 1 and 2 (the first round reused, the second re-run)", c, s)
	}
	fork := journal(t, rt, id)
	var start swarm.Event
	if err := json.Unmarshal(fork[0].Data, &start); err != nil {
		t.Fatal(err)
	}
	if start.ForkOf != origin.ID() || start.ForkAt != at || start.Reused == 0 {
		t.Errorf("fork's start: fork_of %q, fork_at %q, reused %d", start.ForkOf, start.ForkAt, start.Reused)
	}
	// The reused records are the origin's, byte for byte, with their times.
	for i := 1; i <= start.Reused; i++ {
		o, f := orig[i], fork[i]
		if o.Key != f.Key || o.Type != f.Type || string(o.Data) != string(f.Data) || !o.Time.Equal(f.Time) {
			t.Errorf("record %d: fork %s %s, origin %s %s", i, f.Key, f.Type, o.Key, o.Type)
		}
	}
	if fork[start.Reused+1].Key != at {
		t.Errorf("first new record of the fork is %q, want %q", fork[start.Reused+1].Key, at)
	}
	// The second round's model response is new: taken after the fork.
	for _, rec := range fork {
		if rec.Key == at && !rec.Time.After(fork[0].Time) {
			t.Errorf("the fork's %s is the origin's (time %v), want a new call", at, rec.Time)
		}
	}
	// The reused call is the origin's: the fork is charged only the two
	// calls it made, on its row and in its tree's usage alike.
	if st.Usage.Calls != 2 {
		t.Errorf("fork usage counts %d calls, want 2 (the reused one is not charged again)", st.Usage.Calls)
	}
	if u, err := rt.TreeUsage(ctx, id); err != nil || u.Calls != 2 {
		t.Errorf("fork tree usage %+v (%v), want 2 calls", u, err)
	}
}

// TestForkWithEditedInput re-runs from the start with another input:
// nothing is reused.
func TestForkWithEditedInput(t *testing.T) {
	ctx := ctxT(t)
	rt, s, charged, _ := forkShop(t)
	_, origin, err := s.Run(ctx, rt, "a lamp")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.Fork(ctx, origin.ID(), "", fork.Input(json.RawMessage(`"a chair"`)), fork.ID("chair-1"))
	if err != nil {
		t.Fatal(err)
	}
	if id != "chair-1" {
		t.Errorf("id %q", id)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("fork: %+v %v", st, err)
	}
	if charged.Load() != 2 {
		t.Errorf("charge ran %d times, want 2", charged.Load())
	}
	recs := journal(t, rt, id)
	var start swarm.Event
	_ = json.Unmarshal(recs[0].Data, &start)
	if string(start.Input) != `"a chair"` || start.Reused != 0 || start.ForkOf != origin.ID() {
		t.Errorf("start %+v", start)
	}
}

// TestForkErrors: bad step keys, inputs and ids create nothing.
func TestForkErrors(t *testing.T) {
	ctx := ctxT(t)
	rt, s, _, _ := forkShop(t)
	_, origin, err := s.Run(ctx, rt, "a lamp")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := rt.List(ctx, store.Filter{})
	for _, c := range []struct {
		name string
		id   string
		at   string
		opts []fork.Option
		want error
	}{
		{"unknown run", "nope", "", nil, store.ErrNotFound},
		{"unknown step", origin.ID(), "t9/model", nil, swarm.ErrInvalidInput},
		{"bad input", origin.ID(), "", []fork.Option{fork.Input(json.RawMessage(`{`))}, swarm.ErrInvalidInput},
		{"bad id", origin.ID(), "", []fork.Option{fork.ID("a b")}, swarm.ErrInvalidInput},
		{"taken id", origin.ID(), "", []fork.Option{fork.ID(origin.ID())}, store.ErrExists},
	} {
		if _, err := rt.Fork(ctx, c.id, c.at, c.opts...); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	after, _ := rt.List(ctx, store.Filter{})
	if len(after) != len(before) {
		t.Errorf("%d runs after failed forks, want %d", len(after), len(before))
	}
}

// TestForkAtAnsweredPause forks at the answer to a pause: the fork waits
// at that pause, and a different answer continues it.
func TestForkAtAnsweredPause(t *testing.T) {
	ctx := ctxT(t)
	s := swarm.Define[string, string]("ask", "", func(string) swarm.Spec { return swarm.Spec{} })
	rt, _ := newRuntime(t, scripted.Script{"ask": {
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "which colour?"})),
		scripted.Text("painted"),
	}}, nil)
	res, run, err := s.Run(ctx, rt, "a wall")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Paused); !ok {
		t.Fatalf("%#v", res)
	}
	if err := run.Resume(ctx, "red"); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	at := ""
	for _, rec := range journal(t, rt, run.ID()) {
		if rec.Type == string(swarm.EventResumed) {
			at = rec.Key
		}
	}
	id, err := rt.Fork(ctx, run.ID(), at)
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Status(ctx, id)
	if err != nil || st.State != swarm.StatePaused || st.Reason != "which colour?" {
		t.Fatalf("fork: %+v %v", st, err)
	}
	if err := rt.Resume(ctx, id, "blue"); err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("fork after resume: %+v %v", st, err)
	}
	var answer string
	for _, rec := range journal(t, rt, id) {
		if rec.Type == string(swarm.EventResumed) {
			var ev swarm.Event
			_ = json.Unmarshal(rec.Data, &ev)
			answer = ev.Message
		}
	}
	if answer != "blue" {
		t.Errorf("the fork's answer is %q, want blue", answer)
	}
}
