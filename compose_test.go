package swarm_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
)

type Ticket struct {
	Event string `json:"event"`
	Seats int    `json:"seats"`
}

type Booking struct {
	Confirmation string `json:"confirmation"`
}

func ticketing() *swarm.Swarm[Ticket, Booking] {
	return swarm.Define[Ticket, Booking]("ticketing", "Books tickets for events", func(in Ticket) swarm.Spec {
		return swarm.Spec{Instructions: "Book {{.Input.seats}} seats for {{.Input.event}}."}
	})
}

func activities(h swarm.Handoff) *swarm.Swarm[string, string] {
	return swarm.Define[string, string]("activities", "Plans and books activities", func(in string) swarm.Spec {
		return swarm.Spec{Instructions: "Plan: {{.Input}}", Handoffs: []swarm.Handoff{h}}
	})
}

// children returns the run's child runs.
func children(t *testing.T, rt *swarm.Runtime, id string) []swarm.Status {
	t.Helper()
	kids, err := rt.List(context.Background(), store.Filter{Parent: id})
	if err != nil {
		t.Fatal(err)
	}
	return kids
}

func TestSwarmHandoffIsAChildRun(t *testing.T) {
	m := scripted.New(scripted.Script{
		"activities": {
			scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "jazz night", "seats": 2}})),
			scripted.Text("Booked: see confirmation."),
		},
		"ticketing": {scripted.Text(`{"confirmation": "JZ-42"}`)},
	})
	var mu sync.Mutex
	var tool json.RawMessage
	rt, err := swarm.New(swarm.Config{PollInterval: 10 * time.Millisecond, Model: model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		mu.Lock()
		for _, d := range req.Tools {
			if d.Name == "handoff_to_ticketing" {
				tool = d.Parameters
			}
		}
		mu.Unlock()
		return m.Generate(ctx, req)
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := ctxT(t)
	res, run, err := activities(swarm.ToSwarm(ticketing())).Run(ctx, rt, "an evening out")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Completed[string]); !ok {
		t.Fatalf("result %#v", res)
	}
	kids := children(t, rt, run.ID())
	if len(kids) != 1 || kids[0].Swarm != "ticketing" || kids[0].State != swarm.StateCompleted || string(kids[0].Result) != `{"confirmation":"JZ-42"}` {
		t.Fatalf("children = %+v", kids)
	}
	if !strings.HasPrefix(kids[0].ID, run.ID()+".") {
		t.Errorf("child id %q not derived from parent %q", kids[0].ID, run.ID())
	}
	evs, _ := rt.History(ctx, run.ID(), 0)
	var ret *swarm.Event
	for i := range evs {
		if evs[i].Type == swarm.EventHandoffReturned {
			ret = &evs[i]
		}
	}
	if ret == nil || ret.Child != kids[0].ID || ret.Output != `{"confirmation":"JZ-42"}` || ret.IsError {
		t.Fatalf("handoff_returned = %+v", ret)
	}
	// The parent's usage includes the child's.
	st, _ := rt.Status(ctx, run.ID())
	if st.Usage.Calls != 3 {
		t.Errorf("tree usage calls = %d, want 3", st.Usage.Calls)
	}
	if left := m.Unconsumed(run.ID())["activities"]; left != 0 {
		t.Errorf("parent left %d steps", left)
	}
	if left := m.Unconsumed(kids[0].ID)["ticketing"]; left != 0 {
		t.Errorf("child left %d steps", left)
	}
	// The child's input schema is the handoff tool's argument.
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(string(tool), `"input"`) || !strings.Contains(string(tool), `"seats"`) || strings.Contains(string(tool), "customization") {
		t.Errorf("handoff_to_ticketing parameters = %s", tool)
	}
}

func TestChildFailureAndBadInputGoBackToTheModel(t *testing.T) {
	rt, _ := newRuntime(t, scripted.Script{
		"activities": {
			scripted.Tools(
				scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": 5}}),
				scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "opera", "seats": 1}}),
			),
			scripted.Text("Could not book."),
		},
		"ticketing": {scripted.Tools(scripted.CallTool("fail", map[string]any{"reason": "sold out"}))},
	}, nil)
	ctx := ctxT(t)
	_, run, err := activities(swarm.ToSwarm(ticketing())).Run(ctx, rt, "opera")
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := rt.History(ctx, run.ID(), 0)
	var outs []string
	for _, e := range evs {
		if e.Type == swarm.EventHandoffReturned {
			if !e.IsError {
				t.Errorf("handoff %s: not an error: %s", e.CallID, e.Output)
			}
			outs = append(outs, e.Output)
		}
	}
	if len(outs) != 2 || !strings.Contains(outs[0]+outs[1], "does not match its schema") || !strings.Contains(outs[0]+outs[1], "failed: sold out") {
		t.Errorf("outputs = %q", outs)
	}
	if kids := children(t, rt, run.ID()); len(kids) != 1 || kids[0].State != swarm.StateFailed {
		t.Errorf("children = %+v", kids)
	}
}

func TestPauseBelowSurfacesAndResumeReachesIt(t *testing.T) {
	rt, _ := newRuntime(t, scripted.Script{
		"activities": {
			scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "final", "seats": 9}})),
			scripted.Text("Done."),
		},
		"ticketing": {
			scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "9 seats cost 900 EUR", "context": "approve?"})),
			scripted.Text(`{"confirmation": "F-9"}`),
		},
	}, nil)
	ctx := ctxT(t)
	res, run, err := activities(swarm.ToSwarm(ticketing())).Run(ctx, rt, "the final")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := res.(swarm.Paused)
	if !ok {
		t.Fatalf("result %#v, want Paused", res)
	}
	kids := children(t, rt, run.ID())
	if len(kids) != 1 || kids[0].State != swarm.StatePaused {
		t.Fatalf("children = %+v", kids)
	}
	if p.Reason != "9 seats cost 900 EUR" || p.Context != "approve?" || p.Waiting != kids[0].ID {
		t.Errorf("paused = %+v", p)
	}
	// A resume of the completed child's parent reaches the child.
	if err := run.Resume(ctx, "approved"); err != nil {
		t.Fatal(err)
	}
	res, err = run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "Done." {
		t.Fatalf("after resume: %#v", res)
	}
	evs, _ := rt.History(ctx, kids[0].ID, 0)
	found := false
	for _, e := range evs {
		if e.Type == swarm.EventResumed && e.Message == "approved" {
			found = true
		}
	}
	if !found {
		t.Error("the child never received the answer")
	}
	if err := run.Resume(ctx, "again"); !errors.Is(err, store.ErrInvalidState) {
		t.Errorf("resume of a completed run: %v", err)
	}
}

func TestStopParentStopsDescendants(t *testing.T) {
	rt, _ := newRuntime(t, scripted.Script{
		"activities": {scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "x", "seats": 1}}))},
		"ticketing":  {scripted.Step{Text: `{"confirmation":"late"}`, Delay: time.Hour}},
	}, nil)
	ctx := ctxT(t)
	run, err := activities(swarm.ToSwarm(ticketing())).Start(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	var kid string
	for kid == "" {
		if kids := children(t, rt, run.ID()); len(kids) == 1 {
			kid = kids[0].ID
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := run.Stop(ctx, "changed my mind"); err != nil {
		t.Fatal(err)
	}
	if res, _ := run.Wait(ctx); res.State() != swarm.StateStopped {
		t.Fatalf("parent %#v", res)
	}
	st, err := rt.Wait(ctx, kid)
	if err != nil || st.State != swarm.StateStopped || !strings.Contains(st.Reason, run.ID()) {
		t.Fatalf("child %+v %v", st, err)
	}
}

func TestDepthLimitStopsRecursion(t *testing.T) {
	// A swarm that always hands off to itself.
	var self *swarm.Swarm[string, string]
	self = swarm.Define[string, string]("echo", "Recurses", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "recurse", Handoffs: []swarm.Handoff{swarm.ToSwarmID("echo")}}
	})
	rt, err := swarm.New(swarm.Config{MaxDepth: 3, PollInterval: 10 * time.Millisecond, Model: scripted.New(scripted.Script{
		"echo": {
			scripted.Tools(scripted.CallTool("handoff_to_echo", map[string]any{"request": "deeper"})),
			scripted.Text("bottom"),
		},
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := ctxT(t)
	res, run, err := self.Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "bottom" {
		t.Fatalf("result %#v", res)
	}
	depth, id := 0, run.ID()
	for {
		kids := children(t, rt, id)
		if len(kids) == 0 {
			break
		}
		depth++
		id = kids[0].ID
		st, _ := rt.Status(ctx, id)
		if st.Depth != depth {
			t.Errorf("run %s depth %d, want %d", id, st.Depth, depth)
		}
	}
	if depth != 3 {
		t.Errorf("nesting depth %d, want 3", depth)
	}
	evs, _ := rt.History(ctx, id, 0)
	limited := false
	for _, e := range evs {
		if e.Type == swarm.EventHandoffReturned && e.IsError && strings.Contains(e.Output, "depth limit (3)") {
			limited = true
		}
	}
	if !limited {
		t.Error("the deepest run never got the depth-limit error")
	}
}

func TestParallelHandoffsRunConcurrentlyAndFanIn(t *testing.T) {
	const n = 5
	var calls []scripted.ToolCall
	for i := range n {
		calls = append(calls, scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "e" + string(rune('a'+i)), "seats": 1}}))
	}
	calls = append(calls, scripted.CallTool("handoff_to_weather", map[string]any{"request": "forecast"}), scripted.CallTool("rsvp", map[string]any{"name": "x"}))
	m := scripted.New(scripted.Script{
		"activities": {scripted.Tools(calls...), scripted.Text("all booked")},
		"ticketing":  {scripted.Text(`{"confirmation":"ok"}`)},
		"weather":    {scripted.Text("sunny")},
	})
	ctx := ctxT(t)
	// Every call (n child swarms, an agent handoff and a tool) waits until
	// all n+2 have started: calls run one at a time never fill the barrier,
	// which then breaks at its deadline and fails the test.
	bar := swarmtest.NewBarrier(n + 2)
	bctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	rt, err := swarm.New(swarm.Config{PollInterval: 10 * time.Millisecond, Model: model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if req.Agent != "activities" {
			_ = bar.Wait(bctx) // reported through bar.Err
		}
		return m.Generate(ctx, req)
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rsvp := swarm.NewTool("rsvp", "Answers an invitation", func(ctx context.Context, in struct {
		Name string `json:"name"`
	}) (string, error) {
		_ = bar.Wait(bctx)
		return "yes", nil
	})
	s := swarm.Define[string, string]("activities", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(ticketing()), swarm.ToAgent(weather)}, Tools: []swarm.Tool{rsvp}}
	})
	res, run, err := s.Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	if err := bar.Err(); err != nil {
		t.Errorf("the calls of one response did not run concurrently: %v", err)
	}
	if _, ok := res.(swarm.Completed[string]); !ok {
		t.Fatalf("%#v", res)
	}
	evs, _ := rt.History(ctx, run.ID(), 0)
	var order []string
	maxStartedBeforeReturn := 0
	started := 0
	for _, e := range evs {
		switch e.Type {
		case swarm.EventHandoffReturned:
			order = append(order, e.CallID)
			if started > maxStartedBeforeReturn {
				maxStartedBeforeReturn = started
			}
		case swarm.EventHandoffStarted:
			started++
		}
	}
	if len(order) != n+1 {
		t.Fatalf("%d handoffs returned", len(order))
	}
	// All handoffs were announced (in the model response's append) before
	// any returned, and every child ran: no branch waited for another.
	if maxStartedBeforeReturn != n+1 {
		t.Errorf("started before first return = %d", maxStartedBeforeReturn)
	}
	if kids := children(t, rt, run.ID()); len(kids) != n {
		t.Errorf("%d child runs, want %d", len(kids), n)
	}
}

func TestNoGoroutineLeakAfterChildren(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		rt, _ := newRuntime(t, scripted.Script{
			"activities": {scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "x", "seats": 1}})), scripted.Text("ok")},
			"ticketing":  {scripted.Text(`{"confirmation":"c"}`)},
		}, nil)
		ctx := ctxT(t)
		if _, _, err := activities(swarm.ToSwarm(ticketing())).Run(ctx, rt, "x"); err != nil {
			t.Fatal(err)
		}
		rt.Close()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before+2 {
		t.Errorf("goroutines: %d before, %d after", before, g)
	}
}

func TestUsageAndCostThroughTheTree(t *testing.T) {
	model.SetPrice("test:priced", model.Price{Input: 1, Output: 2})
	m := scripted.New(scripted.Script{
		"activities": {
			{ToolCalls: []scripted.ToolCall{scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "x", "seats": 1}})}, Usage: model.Usage{InputTokens: 1000, OutputTokens: 100}},
			{Text: "done", Usage: model.Usage{InputTokens: 2000, OutputTokens: 10}},
		},
		"ticketing": {{Text: `{"confirmation":"c"}`, Usage: model.Usage{InputTokens: 500, OutputTokens: 50}}},
	})
	rt, err := swarm.New(swarm.Config{Model: m, ModelSpec: "test:priced", PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := ctxT(t)
	_, run, err := activities(swarm.ToSwarm(ticketing())).Run(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := run.Status(ctx)
	wantCost := (3500*1.0 + 160*2.0) / 1e6
	if st.Usage.InputTokens != 3500 || st.Usage.OutputTokens != 160 || st.Usage.Calls != 3 || math.Abs(st.Usage.Cost-wantCost) > 1e-12 {
		t.Errorf("tree usage %+v, want 3500/160 tokens, 3 calls, $%g", st.Usage, wantCost)
	}
	by, err := rt.UsageByAgent(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if by["activities"].InputTokens != 3000 || by["ticketing"].InputTokens != 500 || math.Abs(by["ticketing"].Cost-(500+100)/1e6) > 1e-12 {
		t.Errorf("by agent %+v", by)
	}
}
