package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/team"
	"github.com/swarmrt/swarm/temporal"
	"github.com/swarmrt/swarm/workflow"
	"go.temporal.io/sdk/client"
)

// tagline is a workflow with a fan-out: a writer drafts, a Go function
// and a critic look at the draft in parallel, and a loop shortens it.
func tagline() (swarm.Definition, *counting) {
	writer := &swarm.Agent{Name: "writer", Instructions: "Write a tagline for the product."}
	critic := &swarm.Agent{Name: "critic", Instructions: "Say what is weak in the tagline."}
	count := workflow.Func("count", func(_ context.Context, s string) (string, error) {
		return fmt.Sprint(len(strings.Fields(s)), " words"), nil
	})
	trim := workflow.Func("trim", func(_ context.Context, s string) (string, error) {
		words := strings.Fields(s)
		return strings.Join(words[:len(words)-1], " "), nil
	})
	def := workflow.Define("tagline", "Writes a short tagline", workflow.Then(
		workflow.Then(workflow.Agent[string, string](writer),
			workflow.Then(workflow.Parallel("look", workflow.Join{}, count, workflow.Agent[string, string](critic)),
				workflow.Func("pick", func(_ context.Context, looks []string) (string, error) { return looks[1], nil }))),
		workflow.Loop("shorten", 5, workflow.UntilFunc(func(s string) bool { return len(strings.Fields(s)) <= 3 }), trim),
	))
	return def, &counting{m: scripted.New(scripted.Script{
		"writer": {scripted.Text("Tea anywhere the sun shines")},
		"critic": {scripted.Text("Boils water fast with only sunlight today")},
	})}
}

func TestWorkflowFanOut(t *testing.T) {
	def, m := tagline()
	v := newEnv(t, m, def)
	id, out := v.run(t, "tagline", "a solar kettle")
	if out.Status != "completed" || string(out.Result) != `"Boils water fast"` {
		t.Fatalf("outcome %+v", out)
	}
	if m.calls("writer") != 1 || m.calls("critic") != 1 {
		t.Errorf("model calls %v", m.n)
	}
	got := strings.Join(v.types(t, id), "\n")
	for _, want := range []string{"recorded look/count", "handoff_returned look/critic/tool/next", "recorded pick", "recorded shorten/1/trim", "completed end"} {
		if !strings.Contains(got, want) {
			t.Errorf("journal lacks %q:\n%s", want, got)
		}
	}
}

// research is the adaptive loop over two agents.
func research() (swarm.Definition, *counting) {
	searcher := &swarm.Agent{Name: "searcher", Description: "Searches"}
	writer := &swarm.Agent{Name: "writer", Description: "Writes"}
	def := swarm.Define[string, string]("research", "Researches a topic", func(string) swarm.Spec {
		return swarm.Spec{
			Handoffs: []swarm.Handoff{swarm.ToAgent(searcher), swarm.ToAgent(writer)},
			Strategy: strategy.Of(adaptive.New()),
		}
	})
	round := func(next string) scripted.Step {
		return scripted.Text(`{"is_request_satisfied": false, "is_in_loop": false, "is_progress_being_made": true, "next_handoff": "` + next + `", "instruction": "go on"}`)
	}
	return def, &counting{m: scripted.New(scripted.Script{
		"research": {
			scripted.Text(`{"facts": {"given": ["a topic"]}, "plan": ["search", "write"]}`),
			round("searcher"), round("writer"),
			scripted.Text(`{"is_request_satisfied": true, "is_in_loop": false, "is_progress_being_made": true}`),
			scripted.Text("a short report"),
		},
		"searcher": {scripted.Text("one page")},
		"writer":   {scripted.Text("a report")},
	})}
}

func TestAdaptive(t *testing.T) {
	def, m := research()
	v := newEnv(t, m, def)
	_, out := v.run(t, "research", "durable execution")
	if out.Status != "completed" || string(out.Result) != `"a short report"` {
		t.Fatalf("outcome %+v", out)
	}
	if m.calls("research") != 5 || m.calls("searcher") != 1 || m.calls("writer") != 1 {
		t.Errorf("model calls %v", m.n)
	}
}

// parent delegates to the swarm "child" and returns its answer.
type parent struct{}

func (parent) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	a, err := d.Delegate(ctx, "ask-child", "child", "hello")
	if err != nil {
		return nil, err
	}
	return json.Marshal("child said " + a)
}

func family() (swarm.Definition, swarm.Definition, *counting) {
	child := swarm.Define[string, string]("child", "answers", func(string) swarm.Spec { return swarm.Spec{Instructions: "Answer."} })
	par := swarm.Define[string, string]("parent", "delegates", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(child)}, Strategy: strategy.Of(parent{})}
	})
	return par, child, &counting{m: scripted.New(scripted.Script{"child": {scripted.Text("hi")}})}
}

func TestChildSwarm(t *testing.T) {
	par, child, m := family()
	v := newEnv(t, m, par, child)
	id, out := v.run(t, "parent", "x")
	if out.Status != "completed" || string(out.Result) != `"child said hi"` {
		t.Fatalf("outcome %+v", out)
	}
	ctx := context.Background()
	runs, err := v.st.List(ctx, store.Filter{Parent: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Swarm != "child" || runs[0].State != store.Completed || string(runs[0].Result) != `"hi"` {
		t.Fatalf("child runs %+v", runs)
	}
	if m.calls("child") != 1 {
		t.Errorf("model calls %v", m.n)
	}
	got := strings.Join(v.types(t, id), "\n")
	for _, want := range []string{"handoff_started ask-child/call/next", "handoff_returned ask-child/tool/next", "completed end"} {
		if !strings.Contains(got, want) {
			t.Errorf("journal lacks %q:\n%s", want, got)
		}
	}
}

func TestTreeLimit(t *testing.T) {
	// The runtime's model call limit holds across the tree: a loop that
	// never answers fails at it.
	ping := swarm.NewTool("ping", "pings", func(context.Context, struct{}) (string, error) { return "pong", nil })
	loop := swarm.Define[string, string]("loop", "loops", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Ping.", Tools: []swarm.Tool{ping}, MaxTurns: 100}
	})
	var steps []scripted.Step
	for i := range 20 {
		steps = append(steps, scripted.Tools(scripted.ToolCall{ID: fmt.Sprint("c", i), Name: "ping"}))
	}
	m := &counting{m: scripted.New(scripted.Script{"loop": steps})}
	ts := newEnvConfig(t, swarm.Config{Model: m, MaxModelCalls: 3}, loop)
	_, out := ts.run(t, "loop", "go")
	if out.Status != "failed" || !strings.Contains(out.Reason, "budget exceeded") {
		t.Fatalf("outcome %+v", out)
	}
	if n := m.calls("loop"); n != 3 {
		t.Errorf("%d model calls, want 3", n)
	}
}

func TestRefused(t *testing.T) {
	child := swarm.Define[string, string]("child", "answers", func(string) swarm.Spec { return swarm.Spec{Instructions: "Answer."} })
	lead := swarm.Define[string, string]("lead", "hands off", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Hand off.", Handoffs: []swarm.Handoff{swarm.ToSwarm(child)}}
	})
	v := newEnv(t, scripted.New(nil), lead, child)
	ctx := ctxFor(t)
	_, err := v.e.Start(ctx, "lead", "", json.RawMessage(`"x"`))
	if !errors.Is(err, temporal.ErrUnsupported) {
		t.Fatalf("start: %v", err)
	}
	if runs, _ := v.st.List(ctx, store.Filter{}); len(runs) != 0 {
		t.Fatalf("a refused run stored %d rows", len(runs))
	}
	// A team's members share mailboxes: refused too.
	tm := team.DefineTeam("crew", "a team", team.TeamSpec{Lead: &swarm.Agent{Name: "lead", Instructions: "Lead."}})
	if err := v.rt.Register(tm); err != nil {
		t.Fatal(err)
	}
	if _, err := v.e.Start(ctx, "crew", "", json.RawMessage(`"x"`)); !errors.Is(err, temporal.ErrUnsupported) {
		t.Fatalf("start of a team: %v", err)
	}
	if runs, _ := v.st.List(ctx, store.Filter{}); len(runs) != 0 {
		t.Fatalf("a refused team stored %d rows", len(runs))
	}
	if _, err := v.e.Start(ctx, "nope", "", nil); !errors.Is(err, swarm.ErrUnknownSwarm) {
		t.Fatalf("start of an unknown swarm: %v", err)
	}
}

// asker asks its model, then delegates to the swarm "child".
type asker struct{}

func (asker) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	if _, err := d.Ask(ctx, "think", strategy.AskOptions{}, []model.Message{{Role: model.RoleUser, Content: "think"}}); err != nil {
		return nil, err
	}
	a, err := d.Delegate(ctx, "ask-child", "child", "hello")
	if err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

func TestTreeLimitChild(t *testing.T) {
	// A child workflow's run is in its parent's tree: it gets what the
	// parent left of the model call limit, here nothing.
	child := swarm.Define[string, string]("child", "answers", func(string) swarm.Spec { return swarm.Spec{Instructions: "Answer."} })
	par := swarm.Define[string, string]("asker", "asks, then delegates", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(child)}, Strategy: strategy.Of(asker{})}
	})
	m := &counting{m: scripted.New(scripted.Script{"asker": {scripted.Text("hm")}, "child": {scripted.Text("hi")}})}
	v := newEnvConfig(t, swarm.Config{Model: m, MaxModelCalls: 1}, par, child)
	id, out := v.run(t, "asker", "x")
	if out.Status != "failed" || !strings.Contains(out.Reason, "budget exceeded") {
		t.Fatalf("outcome %+v", out)
	}
	runs, err := v.st.List(context.Background(), store.Filter{Parent: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].State != store.Failed || !strings.Contains(runs[0].Reason, "budget exceeded") {
		t.Fatalf("child runs %+v", runs)
	}
	if m.calls("asker") != 1 || m.calls("child") != 0 {
		t.Errorf("model calls %v", m.n)
	}
}

func TestInputParts(t *testing.T) {
	// A large part of the input goes by blob reference: the model sees
	// its bytes, the workflow's history does not hold them.
	type doc struct {
		Text string
		File model.Part
	}
	reader := swarm.Define[doc, string]("reader", "reads", func(doc) swarm.Spec { return swarm.Spec{Instructions: "Read."} })
	m := &counting{m: scripted.New(scripted.Script{"reader": {{Text: "read it", ExpectParts: []scripted.ExpectPart{{MinBytes: 300 << 10}}}}})}
	v := newEnv(t, m, reader)
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	id, out := v.run(t, "reader", doc{Text: "this", File: model.Part{Type: model.PartFile, MediaType: "text/plain", Name: "a.txt", Data: big}})
	if out.Status != "completed" || string(out.Result) != `"read it"` {
		t.Fatalf("outcome %+v", out)
	}
	if _, size := historySize(t, v.c, id); size > 100<<10 {
		t.Errorf("the workflow's history holds %d bytes", size)
	}
}

func TestStartFails(t *testing.T) {
	// A stored run whose workflow cannot start ends failed, rather than
	// stay running, held by the engine, for good.
	def, m := calc()
	v := newEnv(t, m, def)
	ctx := ctxFor(t)
	if _, err := v.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "run_taken", TaskQueue: "elsewhere"}, "another"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.e.Start(ctx, "calc", "run_taken", json.RawMessage(`"1+1"`)); err == nil {
		t.Fatal("a start whose workflow id is taken succeeded")
	}
	r, err := v.st.Get(ctx, "run_taken")
	if err != nil {
		t.Fatal(err)
	}
	if r.State != store.Failed || !strings.Contains(r.Reason, "did not start") {
		t.Fatalf("row %+v", r)
	}
}

// both asks a human in one branch and its model in another.
type both struct{}

func (both) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	out := make([]string, 2)
	errs := d.Parallel(ctx, 2, func(ctx context.Context, i int) error {
		var err error
		if i == 0 {
			out[0], err = d.Await(ctx, "human", strategy.Question{Reason: "ok?"})
		} else {
			out[1], err = d.Ask(ctx, "machine", strategy.AskOptions{}, []model.Message{{Role: model.RoleUser, Content: "ok?"}})
		}
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return json.Marshal(out[0] + "+" + out[1])
}

func TestParallelAwait(t *testing.T) {
	// A branch waiting for a human does not hold up the others.
	def := swarm.Define[string, string]("both", "asks both", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(both{})} })
	m := &counting{m: scripted.New(scripted.Script{"both": {scripted.Text("yes")}})}
	v := newEnv(t, m, def)
	ctx := ctxFor(t)
	id, err := v.e.Start(ctx, "both", "", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		got := strings.Join(v.types(t, id), "\n")
		return strings.Contains(got, "model_response machine/model") && strings.Contains(got, "paused human")
	})
	if err := v.e.Resume(ctx, id, "sure"); err != nil {
		t.Fatal(err)
	}
	out, err := v.e.Wait(ctx, id)
	if err != nil || out.Status != "completed" || string(out.Result) != `"sure+yes"` {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if m.calls("both") != 1 {
		t.Errorf("model calls %v", m.n)
	}
}
