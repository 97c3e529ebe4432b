package swarm_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

type Activity struct {
	Activity string `json:"activity"`
	Day      string `json:"day,omitempty"`
}

func newRuntime(t *testing.T, script scripted.Script, st store.Store) (*swarm.Runtime, *scripted.Model) {
	t.Helper()
	m := scripted.New(script)
	if st == nil {
		st = memory.New()
	}
	rt, err := swarm.New(swarm.Config{Store: st, Model: m, RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, m
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var weather = &swarm.Agent{Name: "weather", Description: "Weather forecasts", Instructions: "You forecast weather."}

func planner() *swarm.Swarm[string, Activity] {
	return swarm.Define[string, Activity]("planner", "Plans activities", func(in string) swarm.Spec {
		return swarm.Spec{Instructions: "Plan for: {{.Input}}", Handoffs: []swarm.Handoff{swarm.ToAgent(weather)}}
	})
}

func TestHandoffAndTypedResult(t *testing.T) {
	rt, m := newRuntime(t, scripted.Script{
		"planner": {
			scripted.Tools(scripted.CallTool("handoff_to_weather", map[string]any{"request": "weekend forecast"})),
			scripted.Text(`{"activity": "hiking", "day": "Saturday"}`),
		},
		"weather": {scripted.Text("Sunny, 22C")},
	}, nil)
	ctx := ctxT(t)
	res, run, err := planner().Run(ctx, rt, "something outdoors")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := res.(swarm.Completed[Activity])
	if !ok {
		t.Fatalf("result = %#v, want Completed", res)
	}
	if c.Output != (Activity{Activity: "hiking", Day: "Saturday"}) {
		t.Errorf("output = %+v", c.Output)
	}
	if left := m.Unconsumed(run.ID()); len(left) != 0 {
		t.Errorf("script not consumed: %v", left)
	}
	evs, err := rt.History(ctx, run.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		types = append(types, string(e.Type)+":"+e.Agent)
	}
	want := "started:planner model_response:planner handoff_started:planner model_response:weather handoff_returned:planner turn_completed:planner model_response:planner turn_completed:planner completed:planner"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	for _, e := range evs {
		if e.Type == swarm.EventHandoffReturned && e.Output != "Sunny, 22C" {
			t.Errorf("handoff output %q", e.Output)
		}
	}
}

func TestToolValidationAndUnknownTool(t *testing.T) {
	var calls atomic.Int32
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	add := swarm.NewTool("add", "adds", func(ctx context.Context, in addIn) (int, error) {
		calls.Add(1)
		if swarm.IdempotencyKey(ctx) == "" {
			return 0, errors.New("no idempotency key")
		}
		return in.A + in.B, nil
	})
	s := swarm.Define[string, string]("calc", "", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{add}} })
	rt, _ := newRuntime(t, scripted.Script{
		"calc": {
			scripted.Tools(
				scripted.CallTool("add", map[string]any{"a": "x"}),
				scripted.CallTool("nope", map[string]any{}),
				scripted.CallTool("add", map[string]any{"a": 2, "b": 3}),
			),
			scripted.Text("done"),
		},
	}, nil)
	ctx := ctxT(t)
	res, run, err := s.Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
		t.Fatalf("result %#v", res)
	}
	if calls.Load() != 1 {
		t.Errorf("tool ran %d times, want 1 (invalid arguments must not reach it)", calls.Load())
	}
	evs, _ := rt.History(ctx, run.ID(), 0)
	var results []swarm.Event
	for _, e := range evs {
		if e.Type == swarm.EventToolResult {
			results = append(results, e)
		}
	}
	if len(results) != 3 {
		t.Fatalf("got %d tool results", len(results))
	}
	if !results[0].IsError && !results[1].IsError {
		t.Errorf("invalid/unknown calls not reported as errors: %+v", results)
	}
	var sawValue bool
	for _, r := range results {
		if r.Output == "5" && !r.IsError {
			sawValue = true
		}
		if r.Tool == "nope" && (!r.IsError || !strings.Contains(r.Output, "unknown tool")) {
			t.Errorf("unknown tool result %+v", r)
		}
	}
	if !sawValue {
		t.Errorf("no result 5 in %+v", results)
	}
}

func TestNonConformingTextGetsAnotherTurn(t *testing.T) {
	rt, _ := newRuntime(t, scripted.Script{
		"planner": {scripted.Text("I think hiking"), scripted.Text("```json\n{\"activity\":\"hiking\"}\n```")},
	}, nil)
	res, _, err := planner().Run(ctxT(t), rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[Activity]); !ok || c.Output.Activity != "hiking" {
		t.Fatalf("result %#v", res)
	}
}

func TestMaxTurnsFails(t *testing.T) {
	s := swarm.Define[string, Activity]("loop", "", func(string) swarm.Spec { return swarm.Spec{MaxTurns: 2} })
	rt, _ := newRuntime(t, scripted.Script{"loop": {scripted.Text("no"), scripted.Text("still no"), scripted.Text("never")}}, nil)
	res, _, err := s.Run(ctxT(t), rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	f, ok := res.(swarm.Failed)
	if !ok || !strings.Contains(f.Reason, "max turns (2)") {
		t.Fatalf("result %#v", res)
	}
}

func TestBuiltinsFailAndComplete(t *testing.T) {
	rt, _ := newRuntime(t, scripted.Script{
		"planner": {
			scripted.Tools(scripted.CallTool("complete", map[string]any{"result": map[string]any{"activity": 3}})),
			scripted.Tools(scripted.CallTool("complete", map[string]any{"result": map[string]any{"activity": "chess"}})),
		},
	}, nil)
	res, _, err := planner().Run(ctxT(t), rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[Activity]); !ok || c.Output.Activity != "chess" {
		t.Fatalf("result %#v", res)
	}
	rt2, _ := newRuntime(t, scripted.Script{"planner": {scripted.Tools(scripted.CallTool("fail", map[string]any{"reason": "no weather"}))}}, nil)
	res, _, err = planner().Run(ctxT(t), rt2, "x")
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := res.(swarm.Failed); !ok || f.Reason != "no weather" {
		t.Fatalf("result %#v", res)
	}
}

func TestPauseResume(t *testing.T) {
	st := memory.New()
	script := scripted.Script{
		"planner": {
			scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "approve?", "context": "costs $5"})),
			scripted.Text(`{"activity":"approved"}`),
		},
	}
	rt, _ := newRuntime(t, script, st)
	ctx := ctxT(t)
	res, run, err := planner().Run(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := res.(swarm.Paused)
	if !ok || p.Reason != "approve?" || p.Context != "costs $5" || p.Turn != 1 {
		t.Fatalf("result %#v", res)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	// Resuming a finished or running run is refused; a paused one continues
	// in a new runtime (a new process in real life).
	rt2, m2 := newRuntime(t, script, st)
	if err := rt2.Register(planner()); err != nil {
		t.Fatal(err)
	}
	if err := rt2.Resume(ctx, run.ID(), "yes, go"); err != nil {
		t.Fatal(err)
	}
	s, err := rt2.Wait(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if s.State != swarm.StateCompleted || string(s.Result) != `{"activity":"approved"}` {
		t.Fatalf("status %+v", s)
	}
	if left := m2.Unconsumed(run.ID()); len(left) != 0 {
		t.Errorf("unconsumed %v", left)
	}
	if err := rt2.Resume(ctx, run.ID(), "again"); !errors.Is(err, swarm.ErrInvalidState) {
		t.Errorf("resume of completed run: %v", err)
	}
	if err := rt2.Stop(ctx, run.ID(), "late"); !errors.Is(err, swarm.ErrInvalidState) {
		t.Errorf("stop of completed run: %v", err)
	}
	evs, _ := rt2.History(ctx, run.ID(), 0)
	var sawResumed bool
	for _, e := range evs {
		if e.Type == swarm.EventResumed && e.Message == "yes, go" {
			sawResumed = true
		}
	}
	if !sawResumed {
		t.Error("no resumed event")
	}
}

func TestStopRunning(t *testing.T) {
	rt, _ := newRuntime(t, scripted.Script{"planner": {{Text: `{"activity":"x"}`, Delay: time.Hour}}}, nil)
	ctx := ctxT(t)
	run, err := planner().Start(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Stop(ctx, "user cancelled"); err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := res.(swarm.Stopped); !ok || s.Reason != "user cancelled" {
		t.Fatalf("result %#v", res)
	}
}

func TestEventsFollowLive(t *testing.T) {
	rt, _ := newRuntime(t, scripted.Script{
		"planner": {
			{ToolCalls: []scripted.ToolCall{scripted.CallTool("handoff_to_weather", map[string]any{"request": "r"})}, Delay: 20 * time.Millisecond},
			{Text: `{"activity":"a"}`, Delay: 20 * time.Millisecond},
		},
		"weather": {scripted.Text("sun")},
	}, nil)
	ctx := ctxT(t)
	run, err := planner().Start(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	var last swarm.EventType
	for ev, err := range run.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if ev.Seq != n {
			t.Fatalf("seq %d, want %d", ev.Seq, n)
		}
		last = ev.Type
	}
	if last != swarm.EventCompleted || n != 9 {
		t.Fatalf("followed %d events ending with %s", n, last)
	}
	// Replay from a sequence number.
	var from []int64
	for ev, err := range run.Events(ctx, 7) {
		if err != nil {
			t.Fatal(err)
		}
		from = append(from, ev.Seq)
	}
	if len(from) != 2 || from[0] != 8 {
		t.Fatalf("replay from 7: %v", from)
	}
}

func TestStartRejectsBadDefinitions(t *testing.T) {
	rt, _ := newRuntime(t, scripted.Script{}, nil)
	ctx := ctxT(t)
	bad := swarm.Define[string, string]("bad", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgentID("ghost")}}
	})
	if _, err := bad.Start(ctx, rt, "x"); !errors.Is(err, swarm.ErrUnknownAgent) {
		t.Errorf("unknown agent: %v", err)
	}
	dup := swarm.Define[string, string]("dup", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(weather), swarm.ToAgent(weather)}}
	})
	if _, err := dup.Start(ctx, rt, "x"); !errors.Is(err, swarm.ErrDuplicate) {
		t.Errorf("duplicate handoff: %v", err)
	}
	if _, err := rt.Start(ctx, "nope", json.RawMessage(`"x"`)); !errors.Is(err, swarm.ErrUnknownSwarm) {
		t.Errorf("unknown swarm: %v", err)
	}
	runs, _ := rt.List(ctx, store.Filter{})
	if len(runs) != 0 {
		t.Errorf("bad starts created %d runs", len(runs))
	}
}

// factor is the sibling's tool of seed 000's captain example.
var factor = swarm.NewTool("factor", "factors", func(_ context.Context, in struct {
	N int `json:"n"`
}) (string, error) {
	return "2, 3, 5", nil
})

func TestHooksFirePerAgent(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	record := func(layer string) swarm.Hooks {
		return swarm.Hooks{
			OnToolUse: func(_ context.Context, e swarm.Event) {
				mu.Lock()
				seen = append(seen, layer+":tool:"+e.Tool)
				mu.Unlock()
			},
			OnHandoff: func(_ context.Context, e swarm.Event) {
				mu.Lock()
				seen = append(seen, layer+":"+string(e.Type)+":"+e.Target)
				mu.Unlock()
			},
		}
	}
	sibling := &swarm.Agent{Name: "factorer", Tools: []swarm.Tool{factor}, Hooks: record("factorer")}
	captain := swarm.Define[string, string]("captain", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(sibling)}, Hooks: record("captain")}
	})
	rt, _ := newRuntime(t, scripted.Script{
		"captain":  {scripted.Tools(scripted.CallTool("handoff_to_factorer", map[string]any{"request": "factor 30"})), scripted.Text("2 × 3 × 5")},
		"factorer": {scripted.Tools(scripted.CallTool("factor", map[string]any{"n": 30})), scripted.Text("2, 3, 5")},
	}, nil)
	if _, _, err := captain.Run(ctxT(t), rt, "factor 30"); err != nil {
		t.Fatal(err)
	}
	want := []string{"captain:handoff_started:factorer", "factorer:tool:factor", "captain:tool:handoff_to_factorer", "captain:handoff_returned:factorer"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Errorf("hooks fired %q, want %q", seen, want)
	}
}

// A tool that is not made with NewTool gets its arguments checked by the
// runtime against its schema.
type rawTool struct{ calls *atomic.Int32 }

func (rawTool) Name() string        { return "raw" }
func (rawTool) Description() string { return "raw tool" }
func (rawTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`)
}
func (r rawTool) Call(context.Context, json.RawMessage) (string, error) {
	r.calls.Add(1)
	return "ok", nil
}

func TestRuntimeValidatesCustomTools(t *testing.T) {
	var calls atomic.Int32
	s := swarm.Define[string, string]("raw", "", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{rawTool{&calls}}} })
	rt, _ := newRuntime(t, scripted.Script{"raw": {
		scripted.Tools(scripted.CallTool("raw", map[string]any{"x": "not a number"})),
		scripted.Tools(scripted.CallTool("raw", map[string]any{"x": 1})),
		scripted.Text("done"),
	}}, nil)
	if _, _, err := s.Run(ctxT(t), rt, "go"); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("tool called %d times, want 1", calls.Load())
	}
}
