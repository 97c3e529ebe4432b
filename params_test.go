package swarm_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// recorder wraps a scripted model and keeps every request.
type recorder struct {
	m    *scripted.Model
	mu   sync.Mutex
	reqs []model.Request
}

func (r *recorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, *req)
	r.mu.Unlock()
	return r.m.Generate(ctx, req)
}

func (r *recorder) last(agent string) model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.reqs) - 1; i >= 0; i-- {
		if r.reqs[i].Agent == agent {
			return r.reqs[i]
		}
	}
	return model.Request{}
}

func toolNames(req model.Request) string {
	var n []string
	for _, d := range req.Tools {
		n = append(n, d.Name)
	}
	return strings.Join(n, ",")
}

func newRecorded(t *testing.T, script scripted.Script, cfg swarm.Config) (*swarm.Runtime, *recorder) {
	t.Helper()
	rec := &recorder{m: scripted.New(script)}
	cfg.Model = rec
	cfg.PollInterval = 10 * time.Millisecond
	if cfg.Store == nil {
		cfg.Store = memory.New()
	}
	rt, err := swarm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, rec
}

var lookup = swarm.NewTool("lookup", "Looks things up", func(ctx context.Context, in struct {
	Q string `json:"q"`
}) (string, error) {
	return "found " + in.Q, nil
})

func TestWithParamsReplacesAtTheCallSite(t *testing.T) {
	rt, rec := newRecorded(t, scripted.Script{"planner": {scripted.Text(`{"activity":"chess"}`)}}, swarm.Config{})
	if err := rt.RegisterTool(lookup); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	p := planner()
	res, run, err := p.Run(ctx, rt, "rainy day", swarm.WithParams(swarm.Params{
		Instructions: "Only indoor plans for {{.Input}}.", Tools: []swarm.Tool{lookup}, Handoffs: []swarm.Handoff{}, MaxTurns: 3,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[Activity]); !ok || c.Output.Activity != "chess" {
		t.Fatalf("%#v", res)
	}
	req := rec.last("planner")
	if req.System != "Only indoor plans for rainy day." {
		t.Errorf("system = %q", req.System)
	}
	if got := toolNames(req); got != "lookup,complete,pause,fail" {
		t.Errorf("tools = %s", got)
	}
	st, _ := run.Status(ctx)
	if st.MaxTurns != 3 {
		t.Errorf("max turns %d", st.MaxTurns)
	}
	// A tool that is neither registered nor in the spec cannot be recorded.
	stray := swarm.NewTool("stray", "", func(context.Context, struct{}) (string, error) { return "", nil })
	if _, err := p.Start(ctx, rt, "x", swarm.WithParams(swarm.Params{Tools: []swarm.Tool{stray}})); err == nil || !strings.Contains(err.Error(), `"stray"`) {
		t.Errorf("unregistered tool: %v", err)
	}
}

func TestCustomizationIsAdditiveAndChecked(t *testing.T) {
	helper := &swarm.Agent{Name: "helper", Description: "helps", Instructions: "help"}
	rt, rec := newRecorded(t, scripted.Script{
		"activities": {
			scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{
				"input":         map[string]any{"event": "x", "seats": 1},
				"customization": map[string]any{"additional_tools": []string{"nope"}},
			})),
			scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{
				"input": map[string]any{"event": "x", "seats": 1},
				"customization": map[string]any{"additional_instructions": "Prefer aisle seats.", "additional_tools": []string{"lookup"},
					"additional_agents": []string{"helper"}, "max_turns_override": 4},
			})),
			scripted.Text("done"),
		},
		"ticketing": {scripted.Text(`{"confirmation":"A1"}`)},
	}, swarm.Config{})
	if err := rt.RegisterTool(lookup); err != nil {
		t.Fatal(err)
	}
	if err := rt.RegisterAgent(helper); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	res, run, err := activities(swarm.ToSwarm(ticketing()).Customizable()).Run(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Completed[string]); !ok {
		t.Fatalf("%#v", res)
	}
	evs, _ := rt.History(ctx, run.ID(), 0)
	var first string
	for _, e := range evs {
		if e.Type == swarm.EventHandoffReturned {
			first = e.Output
			break
		}
	}
	if !strings.Contains(first, `tool "nope", which is not registered`) {
		t.Errorf("unknown tool result = %q", first)
	}
	if p := rec.last("activities"); !strings.Contains(toolNames(p), "handoff_to_ticketing") {
		t.Errorf("parent tools %s", toolNames(p))
	}
	req := rec.last("ticketing")
	if !strings.HasPrefix(req.System, "Book 1 seats for x.") || !strings.HasSuffix(req.System, "Prefer aisle seats.") {
		t.Errorf("child system = %q", req.System)
	}
	if got := toolNames(req); got != "lookup,handoff_to_helper,complete,pause,fail" {
		t.Errorf("child tools = %s", got)
	}
	kids := children(t, rt, run.ID())
	var applied *swarm.Customization
	for _, k := range kids {
		st, _ := rt.Status(ctx, k.ID)
		if st.Customization != nil {
			applied = st.Customization
		}
		if st.State == swarm.StateCompleted && st.MaxTurns != 4 {
			t.Errorf("child max turns %d", st.MaxTurns)
		}
	}
	if applied == nil || applied.AdditionalInstructions != "Prefer aisle seats." {
		t.Errorf("customization in status = %+v", applied)
	}
	// A handoff that is not customizable refuses a customization.
	rt2, _ := newRecorded(t, scripted.Script{
		"activities": {scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{
			"input": map[string]any{"event": "x", "seats": 1}, "customization": map[string]any{"additional_instructions": "x"}})), scripted.Text("ok")},
	}, swarm.Config{})
	_, run2, err := activities(swarm.ToSwarm(ticketing())).Run(ctx, rt2, "x")
	if err != nil {
		t.Fatal(err)
	}
	evs, _ = rt2.History(ctx, run2.ID(), 0)
	for _, e := range evs {
		if e.Type == swarm.EventHandoffReturned && !strings.Contains(e.Output, "does not accept a customization") {
			t.Errorf("output %q", e.Output)
		}
	}
}

func TestBudgetFailsOrPausesTheTree(t *testing.T) {
	loop := scripted.Script{
		"activities": {
			scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "x", "seats": 1}})),
			scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "y", "seats": 1}})),
			scripted.Text("done"),
		},
		"ticketing": {scripted.Text(`{"confirmation":"c"}`)},
	}
	ctx := ctxT(t)
	rt, _ := newRecorded(t, loop, swarm.Config{})
	res, run, err := activities(swarm.ToSwarm(ticketing())).Run(ctx, rt, "x", swarm.WithBudget(swarm.Budget{ModelCalls: 3}))
	if err != nil {
		t.Fatal(err)
	}
	f, ok := res.(swarm.Failed)
	if !ok || !strings.Contains(f.Reason, "budget exceeded: model calls 3 of 3") {
		t.Fatalf("result %#v", res)
	}
	if st, _ := run.Status(ctx); st.Usage.Calls != 3 {
		t.Errorf("tree calls %d, want 3", st.Usage.Calls)
	}

	rt2, _ := newRecorded(t, loop, swarm.Config{})
	res, run, err = activities(swarm.ToSwarm(ticketing())).Run(ctx, rt2, "x", swarm.WithBudget(swarm.Budget{ModelCalls: 3, Pause: true}))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := res.(swarm.Paused); !ok || !strings.Contains(p.Reason, "budget exceeded") {
		t.Fatalf("result %#v", res)
	}
	if err := run.Resume(ctx, "go on"); err != nil {
		t.Fatal(err)
	}
	res, err = run.Wait(ctx)
	if c, ok := res.(swarm.Completed[string]); err != nil || !ok || c.Output != "done" {
		t.Fatalf("after lifting the budget: %#v %v", res, err)
	}
}
