package workflow_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
	"github.com/swarmrt/swarm/team"
	"github.com/swarmrt/swarm/workflow"
)

type brief struct {
	Topic string `json:"topic"`
	Words int    `json:"words"`
}

type order struct {
	Item string `json:"item"`
}

type receipt struct {
	Code string `json:"code"`
}

// everyKind is a workflow with a node of every kind and every
// composition: an agent with a typed answer (retried once), a parallel
// join of an agent and a function, a loop an evaluator ends, an LLM
// router, a typed child swarm, a first join whose loser never finishes, a
// function with a timeout and a human-input node.
func everyKind() (swarm.Definition, scripted.Script) {
	plan := workflow.Agent[string, brief](agent("planner")).Retry(1)
	toText := workflow.Func("words", func(_ context.Context, b brief) (string, error) { return b.Topic, nil })
	shout := workflow.Func("shout", func(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil })
	review := workflow.Parallel("review", workflow.Join{}, workflow.Agent[string, string](agent("critic")), shout)
	merge := workflow.Func("merge", func(_ context.Context, parts []string) (string, error) { return strings.Join(parts, "/"), nil })
	polish := workflow.Loop("polish", 3, workflow.UntilAgent[string](agent("judge")), workflow.Agent[string, string](agent("editor")))
	shop := swarm.Define[order, receipt]("shop", "sells things", func(order) swarm.Spec {
		return swarm.Spec{Instructions: "Sell {{.Input.item}}."}
	})
	toOrder := workflow.Func("order", func(_ context.Context, s string) (order, error) { return order{Item: s}, nil })
	buy := workflow.Then(toOrder, workflow.Swarm[order, receipt](shop)).Named("buy")
	skip := workflow.Func("skip", func(_ context.Context, s string) (receipt, error) { return receipt{Code: "none"}, nil })
	route := workflow.Route("route", workflow.PickAgent[string](agent("router"), 2), buy, skip)
	stuck := workflow.Func("stuck", func(ctx context.Context, r receipt) (string, error) { <-ctx.Done(); return "", ctx.Err() })
	quick := workflow.Func("quick", func(_ context.Context, r receipt) (string, error) { return r.Code, nil })
	race := workflow.Parallel("race", workflow.Join{Mode: workflow.First}, stuck, quick)
	pick := workflow.Func("pick", func(_ context.Context, s []string) (string, error) { return s[0], nil }).Timeout(time.Minute)
	approve := workflow.Human[string, verdict]("approve", 2, func(s string) string { return "Ship " + s + "?" })
	steps := workflow.Then(workflow.Then(workflow.Then(workflow.Then(plan, toText), workflow.Then(review, merge)), workflow.Then(polish, route)),
		workflow.Then(workflow.Then(race, pick), approve))
	def := workflow.Define("every", "every kind of node", steps)
	return def, scripted.Script{
		"planner": {scripted.Text("not json"), scripted.Text("```json\n{\"topic\": \"bees\", \"words\": 3}\n```")},
		"critic":  {scripted.Text("ok")},
		"editor":  {scripted.Text("e1"), scripted.Text("e2")},
		"judge":   {scripted.Text("again"), scripted.Text("DONE")},
		"router":  {scripted.Text("maybe"), scripted.Text("buy")},
		"shop":    {scripted.Text(`{"code": "R-1"}`)},
	}
}

// Every kind of node and composition passes the conformance kit: killed
// after every journal record and recovered, on every store, the workflow
// ends the same with the same journal, and no finished node runs again.
func TestConformanceEveryKind(t *testing.T) {
	def, script := everyKind()
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{def},
		Swarm:       "every",
		Input:       json.RawMessage(`"write"`),
		Script:      script,
		Answers:     []string{`{"ok": "maybe"}`, `{"ok": true, "note": "R-1"}`},
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			st, err := rt.Status(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"ok":true,"note":"R-1"}`; string(st.Result) != want {
				t.Errorf("result %s, want %s", st.Result, want)
			}
			var decided bool
			for _, ev := range swarmtest.Events(t, rt, id) {
				decided = decided || ev.Key == "race/join" && string(ev.Result) == "[1]"
			}
			if !decided {
				t.Errorf("no journaled decision [1] for the first join")
			}
		},
	})
}

// A graph with a cycle through a human-input node: the human sends the
// draft back once, then approves it.
func TestConformanceGraph(t *testing.T) {
	def := reviewGraph()
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{def},
		Swarm:       "reviewed",
		Input:       json.RawMessage(`"bees"`),
		Script:      scripted.Script{"writer": {scripted.Text("draft one"), scripted.Text("draft two")}},
		Answers:     []string{`{"ok": false, "note": "shorter"}`, `{"ok": true, "note": "draft two"}`},
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			st, _ := rt.Status(context.Background(), id)
			if string(st.Result) != `"published: draft two"` {
				t.Errorf("result %s, want published: draft two", st.Result)
			}
		},
	})
}

type draft struct {
	Text string `json:"text"`
}

// reviewGraph drafts, asks a human, redrafts on a "no" with the human's
// note, publishes on a "yes" (the human's note names what is published).
func reviewGraph() swarm.Definition {
	write := workflow.Agent[string, string](agent("writer"))
	wrap := workflow.Func("wrap", func(_ context.Context, s string) (draft, error) { return draft{Text: s}, nil })
	ask := workflow.Human[draft, verdict]("review", 0, func(d draft) string { return "Publish " + d.Text + "?" })
	publish := workflow.Func("publish", func(_ context.Context, v verdict) (string, error) { return "published: " + v.Note, nil })
	redo := workflow.Func("redo", func(_ context.Context, v verdict) (string, error) { return "rewrite: " + v.Note, nil })
	g := workflow.NewGraph[string, string]("flow", "writer", 20).
		Add(workflow.Node(write), workflow.Node(wrap), workflow.Node(ask), workflow.Node(publish), workflow.Node(redo)).
		Edge("writer", "wrap").Edge("wrap", "review").
		EdgeIf("review", "publish", workflow.FieldEquals("ok", true)).Edge("review", "redo").Edge("redo", "writer")
	return workflow.Define("reviewed", "drafts until a human approves", g.Step())
}

// A team is a definition, so it can be a node: the workflow waits while
// the team talks (each resume of the workflow is the lead's next message),
// durably.
func TestTeamNode(t *testing.T) {
	crew := team.DefineTeam("crew", "a team", team.TeamSpec{Lead: &swarm.Agent{Name: "lead", Instructions: "Lead."}})
	prep := workflow.Func("prep", func(_ context.Context, s string) (string, error) { return "about " + s, nil })
	def := workflow.Define("with-crew", "talks", workflow.Then(prep, workflow.Swarm[string, string](crew)))
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{def},
		Swarm:       def.ID(),
		Input:       json.RawMessage(`"bees"`),
		Script:      scripted.Script{"lead": {scripted.Text("Bees are busy."), scripted.Text("You're welcome.")}},
		Answers:     []string{"thanks"},
		Want:        swarm.StatePaused,
		Timing:      true,
		Stores:      []string{strategytest.Memory, strategytest.SQLite},
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			st, _ := rt.Status(context.Background(), id)
			if st.Reason != swarm.AwaitingMessage {
				t.Errorf("the workflow waits for %q, want the team's %q", st.Reason, swarm.AwaitingMessage)
			}
			var said []string
			runs, err := rt.Store().List(context.Background(), store.Filter{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				for _, ev := range swarmtest.Events(t, rt, r.ID) {
					if ev.Type == swarm.EventModelResponse && ev.Text != "" {
						said = append(said, ev.Text)
					}
				}
			}
			if strings.Join(said, " ") != "Bees are busy. You're welcome." {
				t.Errorf("the team said %q, want its two answers", said)
			}
		},
	})
}

// A timeout that expires, a tolerant join that leaves the timed-out branch
// out, and a quorum join whose third branch never finishes: each decision
// is journaled once and replayed after every crash.
func TestConformanceDecisions(t *testing.T) {
	stuck := func(name string) workflow.Step[string, string] {
		return workflow.Func(name, func(ctx context.Context, s string) (string, error) { <-ctx.Done(); return "", ctx.Err() })
	}
	echo := func(name string) workflow.Step[string, string] {
		return workflow.Func(name, func(_ context.Context, s string) (string, error) { return name + ":" + s, nil })
	}
	tolerant := workflow.Parallel("tolerant", workflow.Join{Tolerate: true}, stuck("slow").Timeout(30*time.Millisecond).Retry(1), echo("quick"))
	first := workflow.Func("first", func(_ context.Context, s []string) (string, error) { return s[0], nil })
	quorum := workflow.Parallel("quorum", workflow.Join{Mode: workflow.Quorum, N: 2}, echo("a"), stuck("never"), echo("b"))
	join := workflow.Func("join", func(_ context.Context, s []string) (string, error) { return strings.Join(s, " "), nil })
	def := workflow.Define("decisions", "decides", workflow.Then(workflow.Then(tolerant, first), workflow.Then(quorum, join)))
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{def},
		Swarm:       "decisions",
		Input:       json.RawMessage(`"x"`),
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			st, _ := rt.Status(context.Background(), id)
			if string(st.Result) != `"a:quick:x b:quick:x"` {
				t.Errorf("result %s, want a:quick:x b:quick:x", st.Result)
			}
			var timeouts int
			for _, ev := range swarmtest.Events(t, rt, id) {
				if ev.Kind == "workflow.timeout" && ev.IsError {
					timeouts++
				}
			}
			if timeouts != 2 {
				t.Errorf("%d timeouts journaled, want 2 (one per attempt)", timeouts)
			}
		},
	})
}
