package strategy_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/swarmtest"
)

// noting records an event of its own in round 2, then waits for a human,
// then records an event of an engine type.
type noting struct{ made *atomic.Int64 }

func (s noting) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	ev, err := d.AtTurn(2).RecordEvent(ctx, "note", func(context.Context) (swarm.Event, error) {
		s.made.Add(1)
		return swarm.Event{Type: "note", Text: "noted", Progress: json.RawMessage(`{"n":1}`)}, nil
	})
	if err != nil {
		return nil, err
	}
	if ev.Text != "noted" || ev.Turn != 2 || string(ev.Progress) != `{"n":1}` {
		return nil, &strategy.Failure{Reason: "note came back as " + ev.Text}
	}
	answer, err := d.Await(ctx, "ask", strategy.Question{Reason: "go on?"})
	if err != nil {
		return nil, err
	}
	if _, err := d.RecordEvent(ctx, "forged", func(context.Context) (swarm.Event, error) {
		return swarm.Event{Type: swarm.EventCompleted, Result: json.RawMessage(`"forged"`)}, nil
	}); err != nil {
		return json.Marshal(answer + ": " + err.Error())
	}
	return json.Marshal("forged event journaled")
}

// A strategy's own event is journaled once, in its round, and comes back
// as recorded on the drive after the pause (its function does not run
// again); an event of an engine type is refused.
func TestStrategyRecordEvent(t *testing.T) {
	var made atomic.Int64
	def := swarm.Define[string, string]("noting", "", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(noting{&made})} })
	rt, id, st := startSeam(t, def, scripted.New(scripted.Script{}), `"x"`, nil)
	if st.State != swarm.StatePaused {
		t.Fatalf("state %s (%s), want paused", st.State, st.Reason)
	}
	ctx := swarmtest.Context(t)
	if err := rt.Resume(ctx, id, "yes"); err != nil {
		t.Fatal(err)
	}
	st, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != swarm.StateCompleted || !strings.Contains(string(st.Result), `yes: invalid definition: step forged: a strategy cannot record an event of type \"completed\"`) {
		t.Fatalf("state %s (%s), result %s", st.State, st.Reason, st.Result)
	}
	if n := made.Load(); n != 1 {
		t.Errorf("the note was made %d times, want 1", n)
	}
	var notes []swarm.Event
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == "note" {
			notes = append(notes, ev)
		}
		if ev.Key == "forged" {
			t.Errorf("the forged event was journaled: %+v", ev)
		}
	}
	if len(notes) != 1 || notes[0].Key != "note" || notes[0].Agent != "noting" || notes[0].Turn != 2 {
		t.Fatalf("notes %+v, want one in turn 2 by the orchestrator", notes)
	}
}

// asking asks the critic with a schema and the orchestrator with a system
// prompt added, then an agent the run does not have.
type asking struct{}

func (asking) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	msgs := []model.Message{{Role: model.RoleUser, Content: "judge"}}
	verdict, err := d.Ask(ctx, "judge", strategy.AskOptions{Agent: "critic", Schema: json.RawMessage(`{"type":"object"}`)}, msgs)
	if err != nil {
		return nil, err
	}
	plan, err := d.AtTurn(3).Ask(ctx, "plan", strategy.AskOptions{System: "Plan only."}, msgs)
	if err != nil {
		return nil, err
	}
	_, err = d.Ask(ctx, "ghost", strategy.AskOptions{Agent: "ghost"}, msgs)
	return json.Marshal(verdict + " " + plan + " " + err.Error())
}

// Ask offers no tools, drops tool calls from the reply, asks for the
// schema, adds to the system prompt, and refuses an agent the run does
// not have.
func TestStrategyAsk(t *testing.T) {
	critic := &swarm.Agent{Name: "critic", Instructions: "Judge.", Tools: []swarm.Tool{swarm.NewTool("t", "t", func(context.Context, struct{}) (string, error) { return "", nil })}}
	def := swarm.Define[string, string]("asking", "", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Lead.", Strategy: strategy.Of(asking{}), Handoffs: []swarm.Handoff{swarm.ToAgent(critic)}}
	})
	m := scripted.New(scripted.Script{
		"critic": {scripted.Step{Text: `{"ok":true}`, ToolCalls: []scripted.ToolCall{scripted.CallTool("t", map[string]any{})}}},
		"asking": {scripted.Text("step 1")},
	})
	var mu sync.Mutex
	var reqs []*model.Request
	spy := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		return m.Generate(ctx, req)
	})
	rt, id, st := startSeam(t, def, spy, `"x"`, nil)
	if st.State != swarm.StateCompleted || string(st.Result) != `"{\"ok\":true} step 1 invalid definition: Ask: \"ghost\" is not an agent of the run"` {
		t.Fatalf("state %s (%s), result %s", st.State, st.Reason, st.Result)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if r := reqs[0]; r.Agent != "critic" || len(r.Tools) != 0 || string(r.ResultSchema) != `{"type":"object"}` || r.System != "Judge." {
		t.Errorf("critic's request: agent %s, tools %v, schema %s, system %q", r.Agent, r.Tools, r.ResultSchema, r.System)
	}
	if r := reqs[1]; r.Agent != "asking" || len(r.Tools) != 0 || r.System != "Lead.\n\nPlan only." {
		t.Errorf("orchestrator's request: agent %s, tools %v, system %q", r.Agent, r.Tools, r.System)
	}
	var keys []string
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventModelResponse {
			keys = append(keys, ev.Key)
			if len(ev.ToolCalls) > 0 {
				t.Errorf("%s journaled tool calls %v", ev.Key, ev.ToolCalls)
			}
			if ev.Key == "plan/model" && ev.Turn != 3 {
				t.Errorf("plan/model in turn %d, want 3", ev.Turn)
			}
		}
	}
	if !slices.Equal(keys, []string{"judge/model", "plan/model"}) {
		t.Errorf("model responses under %q", keys)
	}
}

// checked is a strategy that checks its swarm: it wants a handoff to a
// text swarm and no tools, and reports what it saw.
type checked struct{ saw *[]string }

func (c checked) Check(d *strategy.Driver) (int, error) {
	for _, t := range d.Roster() {
		*c.saw = append(*c.saw, t.Name+" "+t.Description)
		if t.Swarm && !t.TextInput {
			return 0, errors.New("no structured swarms")
		}
	}
	if len(d.ToolNames()) > 0 {
		return 0, errors.New("tools: " + strings.Join(d.ToolNames(), ", "))
	}
	if _, err := d.Model(context.Background(), "k", nil); err == nil {
		return 0, errors.New("Check ran a step")
	}
	return 7, nil
}

func (checked) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	return d.Result("done")
}

// Checker refuses a run when it starts, its error wrapped in ErrInvalid,
// runs no steps, and sets the bound of turns the status shows.
func TestStrategyChecker(t *testing.T) {
	var saw []string
	sub := swarm.Define[string, string]("sub", "does sub things", nil)
	structured := swarm.Define[struct {
		Q string `json:"q"`
	}, string]("structured", "", nil)
	tool := swarm.NewTool("t", "t", func(context.Context, struct{}) (string, error) { return "", nil })
	for name, c := range map[string]struct {
		spec swarm.Spec
		want string
	}{
		"structured swarm": {swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(structured)}}, "invalid definition: no structured swarms"},
		"tools":            {swarm.Spec{Tools: []swarm.Tool{tool}, Registry: &swarm.RegistryAccess{}}, "tools: t, swarm_registry_search, swarm_registry_handoff"},
	} {
		t.Run(name, func(t *testing.T) {
			c.spec.Strategy = strategy.Of(checked{&saw})
			def := swarm.Define[string, string]("checking", "", func(string) swarm.Spec { return c.spec })
			rt, _ := swarmtest.NewRuntime(t, scripted.Script{}, def)
			_, err := rt.Start(swarmtest.Context(t), "checking", []byte(`"x"`))
			if !errors.Is(err, swarm.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrInvalid with %q", err, c.want)
			}
		})
	}
	saw = nil
	def := swarm.Define[string, string]("checking", "", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(checked{&saw}), Handoffs: []swarm.Handoff{swarm.ToSwarm(sub)}}
	})
	_, _, st := startSeam(t, def, scripted.New(scripted.Script{}), `"x"`, nil)
	if st.State != swarm.StateCompleted || string(st.Result) != `"done"` || st.MaxTurns != 7 {
		t.Fatalf("state %s (%s), result %s, max turns %d", st.State, st.Reason, st.Result, st.MaxTurns)
	}
	if !slices.Contains(saw, "sub does sub things") {
		t.Errorf("Check saw %q", saw)
	}
}
