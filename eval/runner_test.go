package eval_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

// support is the swarm under test: an agent with a tool that looks up
// orders.
func support() swarm.Definition {
	return swarm.Define[string, string]("support", "Answers customers", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Help.", Tools: []swarm.Tool{lookupOrder()}}
	})
}

// lookupOrder is the tool of the swarms under test: it finds an order.
func lookupOrder() swarm.Tool {
	return swarm.NewTool("lookup_order", "Finds an order", func(ctx context.Context, in struct {
		ID string `json:"id"`
	}) (string, error) {
		return "order " + in.ID + ": shipped", nil
	})
}

// judgeScorer is a custom scorer that asks the judge whether the output
// is polite.
type judgeScorer struct{}

func (judgeScorer) Name() string { return "polite" }

func (judgeScorer) Score(ctx context.Context, j eval.Judge, c eval.Case, o eval.Observed) ([]eval.Score, error) {
	ans, err := j.Ask(ctx, "polite", "", []model.Message{{Role: model.RoleUser, Content: "Is this polite? " + o.Output}})
	if err != nil {
		return nil, err
	}
	v := 0.0
	if strings.HasPrefix(ans, "yes") {
		v = 1
	}
	return []eval.Score{{Name: "polite", Value: v, Threshold: 1, Pass: v >= 1, Explanation: ans}}, nil
}

func supportSet() *eval.Set {
	s := &eval.Set{Name: "support", Swarm: "support", Judge: "judge"}
	for _, id := range []string{"a", "b", "c"} {
		s.Cases = append(s.Cases, eval.Case{ID: id, Input: "where is order " + id, Expect: eval.Expect{Scorers: []string{"polite"}}})
	}
	return s
}

func supportScript() scripted.Script {
	return scripted.Script{
		"support": {
			scripted.Tools(scripted.CallTool("lookup_order", map[string]any{"id": "x"})),
			scripted.Text("It has shipped."),
		},
		"judge": {scripted.Text("yes, polite"), scripted.Text("no"), scripted.Text("yes")},
	}
}

func TestRunReportsEveryCase(t *testing.T) {
	ctx := swarmtest.Context(t)
	rt, _ := swarmtest.NewRuntime(t, supportScript(), support())
	if err := rt.RegisterAgent(&swarm.Agent{Name: "judge", Instructions: "Judge."}); err != nil {
		t.Fatal(err)
	}
	if err := eval.Define(rt, eval.Options{Scorers: map[string]eval.Scorer{"polite": judgeScorer{}}, Parallel: 1}); err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Run(ctx, rt, supportSet(), eval.RunOptions{Config: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	t.Logf("%s", b)
	if rep.Passed != 2 || rep.Failed != 1 || rep.Errors != 0 {
		t.Errorf("passed %d failed %d errors %d", rep.Passed, rep.Failed, rep.Errors)
	}
}

// countingRuntime is a runtime whose scripted model counts the calls of
// each agent.
func countingRuntime(t *testing.T, script scripted.Script, defs ...swarm.Definition) (*swarm.Runtime, *sync.Map) {
	t.Helper()
	m := scripted.New(script)
	var calls sync.Map
	rt, err := swarm.New(swarm.Config{Store: memory.New(), RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond,
		Model: model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			n, _ := calls.LoadOrStore(req.Agent, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			return m.Generate(ctx, req)
		})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(defs...); err != nil {
		t.Fatal(err)
	}
	if err := rt.RegisterAgent(&swarm.Agent{Name: "judge", Instructions: "Judge."}, &swarm.Agent{Name: "user-sim", Instructions: "Play the user."}); err != nil {
		t.Fatal(err)
	}
	return rt, &calls
}

func callsOf(calls *sync.Map, agent string) int64 {
	n, ok := calls.Load(agent)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// A simulated user that never says its goal is met is bounded by the
// scenario's max_turns: the case's run fails with a reason, and the
// simulator was asked once per message it wrote and once more.
func TestScenarioBounded(t *testing.T) {
	ctx := swarmtest.Context(t)
	script := scripted.Script{
		"clerk":    {scripted.Text("Hello."), scripted.Text("Hello again."), scripted.Text("Still here.")},
		"user-sim": {scripted.Text("hi"), scripted.Text("and?"), scripted.Text("hmm"), scripted.Text("never")},
	}
	rt, calls := countingRuntime(t, script, desk())
	if err := eval.Define(rt, eval.Options{}); err != nil {
		t.Fatal(err)
	}
	set := &eval.Set{Name: "sim", Swarm: "desk", Simulator: "user-sim", Cases: []eval.Case{
		{ID: "endless", Scenario: &eval.Scenario{Goal: "get a refund", MaxTurns: 2}},
	}}
	rep, err := eval.Run(ctx, rt, set, eval.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Cases[0]
	if c.Pass || c.Observed.Status != "failed" || c.Observed.Reason != "the simulated user's goal was not met within max_turns (2 messages)" {
		t.Errorf("case %+v", c)
	}
	if got := transcript(c.Observed.Transcript); got != "user: hi | assistant: Hello. | user: and? | assistant: Hello again." {
		t.Errorf("transcript %s", got)
	}
	if n := callsOf(calls, "user-sim"); n != 3 {
		t.Errorf("the simulator was asked %d times, want 3", n)
	}
}

// A case whose run fails is a failed case with the reason; a case whose
// custom scorer is unknown is an error of the case; the eval run itself
// completes, and each finished case has its progress event.
func TestCaseFailuresAndProgress(t *testing.T) {
	ctx := swarmtest.Context(t)
	script := scripted.Script{"support": {scripted.Fail(model.KindBadRequest)}}
	rt, _ := countingRuntime(t, script, support())
	if err := eval.Define(rt, eval.Options{}); err != nil {
		t.Fatal(err)
	}
	set := &eval.Set{Name: "fails", Swarm: "support", Cases: []eval.Case{
		{ID: "broken", Input: "hi", Tags: []string{"a"}},
		{ID: "unscored", Input: "hi", Tags: []string{"b"}, Expect: eval.Expect{Status: "any", Scorers: []string{"nope"}}},
		{ID: "skipped", Input: "hi", Tags: []string{"c"}},
	}}
	rep, err := eval.Run(ctx, rt, set, eval.RunOptions{Tags: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) != 2 || rep.Failed != 1 || rep.Errors != 1 || rep.Pass {
		t.Fatalf("report %+v", rep)
	}
	if c := rep.Cases[0]; c.Observed.Status != "failed" || c.Observed.Reason == "" || c.Pass {
		t.Errorf("broken: %+v", c)
	}
	if c := rep.Cases[1]; !strings.Contains(c.Error, `unknown scorer "nope"`) {
		t.Errorf("unscored: %+v", c)
	}
	var done []eval.Progress
	for _, ev := range swarmtest.Events(t, rt, rep.RunID) {
		if ev.Type == eval.EventCase {
			var p eval.Progress
			if err := json.Unmarshal(ev.Progress, &p); err != nil {
				t.Fatal(err)
			}
			if ev.Kind != "eval_case" || ev.Target != p.Case {
				t.Errorf("event %+v", ev)
			}
			done = append(done, p)
		}
	}
	if len(done) != 2 || done[1].Done != 2 || done[1].Total != 2 || done[1].Failed+done[1].Errors != 2 {
		t.Errorf("progress %+v", done)
	}
	if p, ok := eval.RunProgress(swarmtest.Events(t, rt, rep.RunID)); !ok || p != done[1] {
		t.Errorf("RunProgress %+v %v, want %+v", p, ok, done[1])
	}
	if _, ok := eval.RunProgress(nil); ok {
		t.Error("progress of no events")
	}
	// Each case's run is a child run of the eval run.
	kids, err := rt.List(ctx, store.Filter{Parent: rep.RunID})
	if err != nil || len(kids) != 2 {
		t.Errorf("%d child runs, %v", len(kids), err)
	}
}

// Start checks what it can before it starts anything, and derives the id
// of an eval run from its set and options: the same command continues an
// unfinished run and, once it has ended, starts the next.
func TestStart(t *testing.T) {
	ctx := swarmtest.Context(t)
	rt, _ := countingRuntime(t, supportScript(), support())
	set := supportSet()
	if _, err := eval.Start(ctx, rt, set, eval.RunOptions{}); !errors.Is(err, swarm.ErrUnknownSwarm) || !strings.Contains(err.Error(), "eval.Define") {
		t.Errorf("undefined eval runner: %v", err)
	}
	if err := eval.Define(rt, eval.Options{Scorers: map[string]eval.Scorer{"polite": judgeScorer{}}}); err != nil {
		t.Fatal(err)
	}
	bad := *set
	bad.Swarm = "nobody"
	if _, err := eval.Start(ctx, rt, &bad, eval.RunOptions{}); !errors.Is(err, swarm.ErrUnknownSwarm) {
		t.Errorf("unknown swarm: %v", err)
	}
	bad = *set
	bad.Cases = append([]eval.Case{}, set.Cases...)
	bad.Cases[1].ID = "a"
	if _, err := eval.Start(ctx, rt, &bad, eval.RunOptions{}); !errors.Is(err, swarm.ErrInvalidInput) || !strings.Contains(err.Error(), "case a: the ID is already used") {
		t.Errorf("duplicate ids: %v", err)
	}
	bad = *set
	bad.Judge = "nobody"
	if _, err := eval.Start(ctx, rt, &bad, eval.RunOptions{}); !errors.Is(err, swarm.ErrUnknownAgent) {
		t.Errorf("unknown judge: %v", err)
	}
	if _, err := eval.Start(ctx, rt, set, eval.RunOptions{Tags: []string{"none"}}); !errors.Is(err, swarm.ErrInvalidInput) {
		t.Errorf("no case selected: %v", err)
	}
	first, err := eval.Start(ctx, rt, set, eval.RunOptions{Config: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := eval.Start(ctx, rt, set, eval.RunOptions{Config: "v1"}); err != nil || again != first {
		t.Errorf("started again: %s (%v), want %s", again, err, first)
	}
	if _, err := eval.Wait(ctx, rt, first); err != nil {
		t.Fatal(err)
	}
	next, err := eval.Start(ctx, rt, set, eval.RunOptions{Config: "v1"})
	if err != nil || next != first+"-2" {
		t.Errorf("after the first ended: %s (%v), want %s-2", next, err, first)
	}
	other, err := eval.Start(ctx, rt, set, eval.RunOptions{Config: "v2"})
	if err != nil || strings.HasPrefix(other, first) {
		t.Errorf("another config: %s (%v)", other, err)
	}
	if _, err := eval.Wait(ctx, rt, first+".case.a"); !errors.Is(err, swarm.ErrInvalidInput) {
		t.Errorf("waiting for a case's run as an eval run: %v", err)
	}
}

// A team's case mails its lead, message after message, and is observed
// from the lead's run and its members'.
func TestTeamMail(t *testing.T) {
	ctx := swarmtest.Context(t)
	script := scripted.Script{
		"lead": {
			scripted.Tools(scripted.CallTool("spawn_teammate", map[string]string{"name": "alice", "role": "coder"})),
			scripted.Text("alice is on it."),
			scripted.Text("Thanks."),
		},
		"alice": {scripted.Text("Working.")},
	}
	crew := team.DefineTeam("crew", "A lead and its teammates", team.TeamSpec{
		Lead: &swarm.Agent{Name: "lead", Instructions: "Lead the team."},
	})
	rt, _ := countingRuntime(t, script, crew)
	if err := eval.Define(rt, eval.Options{}); err != nil {
		t.Fatal(err)
	}
	set := &eval.Set{Name: "team", Swarm: "crew", Cases: []eval.Case{{ID: "parser", Mail: []string{"Have a coder write the parser.", "thanks"}, Expect: eval.Expect{
		Output:     &eval.Output{Contains: []string{"Thanks"}},
		Trajectory: &eval.Trajectory{Calls: []eval.Call{{Name: "spawn_teammate", Agent: "lead", Args: map[string]any{"name": "alice"}}}},
	}}}}
	rep, err := eval.Run(ctx, rt, set, eval.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Cases[0]
	if !c.Pass {
		t.Fatalf("case %+v", c)
	}
	if got := transcript(c.Observed.Transcript); got != "user: Have a coder write the parser. | assistant: alice is on it. | user: thanks | assistant: Thanks." {
		t.Errorf("transcript %s", got)
	}
	// Once scored, the lead's run and its members' are stopped.
	st, err := rt.Status(ctx, c.Observed.RunID)
	if err != nil || st.State != swarm.StateStopped {
		t.Errorf("the lead's run is %s (%v)", st.State, err)
	}
}
