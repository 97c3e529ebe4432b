package adaptive_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/inspect"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
)

// ledger is a task ledger reply of a scripted orchestrator.
func ledger(plan ...string) scripted.Step {
	b, _ := json.Marshal(map[string]any{"facts": map[string]any{"given": []string{"the topic"}}, "plan": plan})
	return scripted.Text(string(b))
}

// judge is a progress ledger reply of a scripted orchestrator.
func judge(progress, loop bool, next, instruction string) scripted.Step {
	b, _ := json.Marshal(map[string]any{"is_request_satisfied": false, "is_in_loop": loop, "is_progress_being_made": progress,
		"next_handoff": next, "instruction": instruction, "reason": "scripted"})
	return scripted.Text(string(b))
}

func satisfied() scripted.Step {
	return scripted.Text(`{"is_request_satisfied": true, "is_in_loop": false, "is_progress_being_made": true, "next_handoff": "", "instruction": ""}`)
}

// research is an adaptive swarm whose orchestrator works with a researcher
// and a writer (both with a lookup tool) and, optionally, a critic.
func research(loop *adaptive.Strategy, lookups *lookupLog) *swarm.Swarm[string, string] {
	var tools []swarm.Tool
	if lookups != nil {
		tools = []swarm.Tool{lookups.tool()}
	}
	researcher := &swarm.Agent{Name: "researcher", Description: "finds sources", Instructions: "Find sources.", Tools: tools}
	writer := &swarm.Agent{Name: "writer", Description: "writes", Instructions: "Write."}
	critic := &swarm.Agent{Name: "critic", Description: "judges progress", Instructions: "Judge."}
	return swarm.Define[string, string]("research", "researches a topic", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Research the topic.", Strategy: strategy.Of(loop),
			Handoffs: []swarm.Handoff{swarm.ToAgent(researcher), swarm.ToAgent(writer), swarm.ToAgent(critic)}}
	})
}

// lookupLog counts the executions of the researcher's lookup tool per
// idempotency key and process.
type lookupLog struct {
	mu      sync.Mutex
	process atomic.Value
	runs    map[string][]string
}

func (l *lookupLog) tool() swarm.Tool {
	return swarm.NewTool("lookup", "looks a source up", func(ctx context.Context, in struct {
		Query string `json:"query"`
	}) (string, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		k := swarm.IdempotencyKey(ctx)
		l.runs[k] = append(l.runs[k], l.process.Load().(string))
		return "found " + in.Query, nil
	})
}

// progressOf returns the progress ledgers of run id in order.
func progressOf(t *testing.T, rt *swarm.Runtime, id string) []adaptive.ProgressLedger {
	t.Helper()
	var out []adaptive.ProgressLedger
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == adaptive.EventProgress {
			p, ok := adaptive.ProgressOf(ev)
			if !ok {
				t.Fatalf("progress event %d without a ledger", ev.Seq)
			}
			out = append(out, p)
		}
	}
	return out
}

// ledgersOf returns the task ledgers of run id with the round each was
// made in.
func ledgersOf(t *testing.T, rt *swarm.Runtime, id string) (ledgers []adaptive.TaskLedger, rounds []int) {
	t.Helper()
	for _, ev := range swarmtest.Events(t, rt, id) {
		if l, ok := adaptive.LedgerOf(ev); ok {
			ledgers = append(ledgers, l)
			rounds = append(rounds, ev.Turn)
		}
	}
	return ledgers, rounds
}

func stallsOf(pls []adaptive.ProgressLedger) []int {
	var out []int
	for _, p := range pls {
		out = append(out, p.Stalls)
	}
	return out
}

func runResearch(t *testing.T, rt *swarm.Runtime, task string, opts ...swarm.StartOption) (string, swarm.Status) {
	t.Helper()
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "research", mustJSON(t, task), opts...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return id, s
}

// spyRuntime is a runtime with def registered whose model plays script,
// showing each request to spy first.
func spyRuntime(t *testing.T, script scripted.Script, def swarm.Definition, spy func(*model.Request)) *swarm.Runtime {
	t.Helper()
	m := scripted.New(script)
	rt, err := swarm.New(swarm.Config{Store: memory.New(), RetryBackoff: time.Millisecond,
		Model: model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			spy(req)
			return m.Generate(ctx, req)
		})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	return rt
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAdaptiveStallCounterDecaysAndReplansAtThreshold: the counter rises on
// rounds without progress, falls on a round with progress, and the replan
// comes when it reaches the threshold — not earlier, as it would without
// the decay.
func TestAdaptiveStallCounterDecaysAndReplansAtThreshold(t *testing.T) {
	script := scripted.Script{
		"research": {
			ledger("ask the researcher", "ask the writer"),
			judge(false, false, "researcher", "look at A"), // r1: stall 1
			judge(false, false, "researcher", "look at B"), // r2: stall 2
			judge(true, false, "researcher", "look at C"),  // r3: progress, 1
			judge(false, false, "researcher", "look at D"), // r4: stall 2
			judge(false, true, "researcher", "look at E"),  // r5: in a loop, 3: replan
			ledger("ask the writer directly"),
			judge(true, false, "writer", "write it up"), // r6
			satisfied(), // r7
			scripted.Text("the report"),
		},
		"researcher": {scripted.Text("a"), scripted.Text("b"), scripted.Text("c"), scripted.Text("d")},
		"writer":     {scripted.Text("a report")},
	}
	rt, m := swarmtest.NewRuntime(t, script, research(adaptive.New().WithStallThreshold(3), nil))
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateCompleted || string(s.Result) != `"the report"` {
		t.Fatalf("state %s (%s), result %s", s.State, s.Reason, s.Result)
	}
	if got, want := stallsOf(progressOf(t, rt, id)), []int{1, 2, 1, 2, 3, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("stall counters %v, want %v", got, want)
	}
	ledgers, rounds := ledgersOf(t, rt, id)
	if len(ledgers) != 2 || rounds[1] != 5 || ledgers[1].Cause != "stall" || ledgers[1].Number != 1 {
		t.Fatalf("ledgers %+v in rounds %v, want a replan in round 5", ledgers, rounds)
	}
	wantChanges := []string{"- ask the researcher", "- ask the writer", "+ ask the writer directly"}
	if !slices.Equal(ledgers[1].Changes, wantChanges) {
		t.Errorf("replan changes %q, want %q", ledgers[1].Changes, wantChanges)
	}
	swarmtest.AssertHandoffs(t, rt, id, "researcher", "researcher", "researcher", "researcher", "writer")
	swarmtest.AssertScriptConsumed(t, m, id)
	swarmtest.AssertJournal(t, rt, id)
}

// TestAdaptiveRepeatsCountAsStalls: an orchestrator that claims progress
// while it repeats one handoff with one instruction, getting the same
// answer, stalls on the deterministic signals alone.
func TestAdaptiveRepeatsCountAsStalls(t *testing.T) {
	same := judge(true, false, "researcher", "find sources")
	script := scripted.Script{
		"research": {
			ledger("find sources"),
			same, same, same, same, // r1..r4: r3 and r4 see a repeat
			ledger("write from what was found"),
			judge(true, false, "writer", "write"),
			satisfied(),
			scripted.Text("done"),
		},
		"researcher": {scripted.Text("A"), scripted.Text("A"), scripted.Text("A")},
		"writer":     {scripted.Text("text")},
	}
	rt, _ := swarmtest.NewRuntime(t, script, research(adaptive.New().WithStallThreshold(2), nil))
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	pls := progressOf(t, rt, id)
	if got, want := stallsOf(pls), []int{0, 0, 1, 2, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("stall counters %v, want %v", got, want)
	}
	if !slices.Equal(pls[2].Signals, []string{"repeat", "no_new_info"}) {
		t.Errorf("round 3 signals %v", pls[2].Signals)
	}
	if _, rounds := ledgersOf(t, rt, id); len(rounds) != 2 || rounds[1] != 4 {
		t.Errorf("ledgers made in rounds %v, want [0 4]", rounds)
	}
}

// TestAdaptivePlanReviewAfterMaxReplans: once the replans are used up the
// run pauses for a plan review; a resume with an edited plan continues with
// that plan, without asking the model for it.
func TestAdaptivePlanReviewAfterMaxReplans(t *testing.T) {
	script := reviewScript
	rt, m := swarmtest.NewRuntime(t, script, research(adaptive.New().WithStallThreshold(1).WithMaxReplans(1), nil))
	ctx := swarmtest.Context(t)
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StatePaused || !strings.HasPrefix(s.Reason, "adaptive max_replans:") {
		t.Fatalf("state %s (%s), want paused for a plan review", s.State, s.Reason)
	}
	evs := swarmtest.Events(t, rt, id)
	last := evs[len(evs)-1]
	if last.Type != swarm.EventPaused || last.Kind != "plan_review" || !strings.Contains(last.Context, "1. step two") {
		t.Fatalf("last event %+v, want the plan review showing the plan", last)
	}
	if err := rt.Resume(ctx, id, `{"plan": ["ask the writer"]}`); err != nil {
		t.Fatal(err)
	}
	s, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != swarm.StateCompleted || string(s.Result) != `"reviewed report"` {
		t.Fatalf("state %s (%s), result %s", s.State, s.Reason, s.Result)
	}
	ledgers, _ := ledgersOf(t, rt, id)
	if len(ledgers) != 3 || ledgers[2].Cause != "review" || !slices.Equal(ledgers[2].Plan, []string{"ask the writer"}) {
		t.Fatalf("ledgers %+v, want the edited plan last", ledgers)
	}
	swarmtest.AssertScriptConsumed(t, m, id)
	swarmtest.AssertJournal(t, rt, id)
}

// TestAdaptiveReviewFeedbackGoesToTheModel: a resume with free text is
// feedback the orchestrator makes a new plan from.
func TestAdaptiveReviewFeedbackGoesToTheModel(t *testing.T) {
	script := scripted.Script{
		"research": {
			ledger("step one"),
			judge(false, false, "researcher", "try"),
			ledger("ask the writer, as the human said"),
			satisfied(),
			scripted.Text("ok"),
		},
		"researcher": {scripted.Text("nothing")},
	}
	var mu sync.Mutex
	var prompts []string
	rt := spyRuntime(t, script, research(adaptive.New().WithStallThreshold(1).WithMaxReplans(-1), nil), func(req *model.Request) {
		mu.Lock()
		prompts = append(prompts, req.Messages[len(req.Messages)-1].Content)
		mu.Unlock()
	})
	ctx := swarmtest.Context(t)
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StatePaused {
		t.Fatalf("state %s (%s), want paused", s.State, s.Reason)
	}
	if err := rt.Resume(ctx, id, "talk to the writer instead"); err != nil {
		t.Fatal(err)
	}
	if s, err := rt.Wait(ctx, id); err != nil || s.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s), %v", s.State, s.Reason, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(prompts) < 3 || !strings.Contains(prompts[2], "talk to the writer instead") {
		t.Fatalf("the replan prompt does not carry the feedback: %q", prompts)
	}
}

// TestAdaptiveExhaustedFails: with on_exhausted fail the run fails with a
// reason code and the synthesized answer.
func TestAdaptiveExhaustedFails(t *testing.T) {
	script := scripted.Script{
		"research": {
			ledger("step"),
			judge(false, false, "researcher", "try"),
			scripted.Text("partial answer"),
		},
		"researcher": {scripted.Text("nothing")},
	}
	rt, _ := swarmtest.NewRuntime(t, script, research(adaptive.New().WithStallThreshold(1).WithMaxReplans(-1).OnExhaustedDo(adaptive.ExhaustedFail), nil))
	_, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateFailed || !strings.HasPrefix(s.Reason, "adaptive max_replans:") || !strings.Contains(s.Reason, "best answer: partial answer") {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
}

// TestAdaptiveExhaustedFailReason: the failure after a delegated round
// quotes the synthesized answer once, not also the last round's answer.
func TestAdaptiveExhaustedFailReason(t *testing.T) {
	script := scripted.Script{
		"research": {
			ledger("step"),
			judge(true, false, "researcher", "try"),  // r1: progress: delegated
			judge(false, false, "researcher", "try"), // r2: a stall, no replans left
			scripted.Text("partial answer"),
		},
		"researcher": {scripted.Text("nothing")},
	}
	rt, _ := swarmtest.NewRuntime(t, script, research(adaptive.New().WithStallThreshold(1).WithMaxReplans(-1).OnExhaustedDo(adaptive.ExhaustedFail), nil))
	_, s := runResearch(t, rt, "topic")
	want := "adaptive max_replans: the run stalled 1 times in a row after 0 replans; best answer: partial answer"
	if s.State != swarm.StateFailed || s.Reason != want {
		t.Fatalf("state %s, reason %q\nwant reason %q", s.State, s.Reason, want)
	}
}

// TestAdaptivePlanReviewReportsMaxRounds: a run paused for a plan review
// reports the bound of its loop (its max rounds), not a max turns the
// adaptive loop does not use.
func TestAdaptivePlanReviewReportsMaxRounds(t *testing.T) {
	script := scripted.Script{
		"research": {ledger("step"), judge(false, false, "researcher", "try")},
	}
	rt, _ := swarmtest.NewRuntime(t, script, research(adaptive.New().WithStallThreshold(1).WithMaxReplans(-1).WithMaxRounds(7), nil))
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StatePaused || s.MaxTurns != 7 {
		t.Fatalf("state %s (%s), max turns %d, want paused with max turns 7 (the max rounds)", s.State, s.Reason, s.MaxTurns)
	}
	if evs := swarmtest.Events(t, rt, id); evs[0].MaxTurns != 7 {
		t.Errorf("started event max turns %d, want 7", evs[0].MaxTurns)
	}
	rt2, _ := swarmtest.NewRuntime(t, script, research(adaptive.New().WithStallThreshold(1).WithMaxReplans(-1), nil))
	if _, s := runResearch(t, rt2, "topic"); s.State != swarm.StatePaused || s.MaxTurns != adaptive.DefaultMaxRounds {
		t.Fatalf("state %s, max turns %d, want paused with max turns %d (the default max rounds)", s.State, s.MaxTurns, adaptive.DefaultMaxRounds)
	}
}

// TestAdaptiveMaxRounds: the rounds are bounded and the final answer is
// synthesized on that exit too.
func TestAdaptiveMaxRounds(t *testing.T) {
	script := scripted.Script{
		"research": {
			ledger("step"),
			judge(true, false, "researcher", "one"),
			judge(true, false, "researcher", "two"),
			scripted.Text("as far as we got"),
		},
		"researcher": {scripted.Text("1"), scripted.Text("2")},
	}
	rt, m := swarmtest.NewRuntime(t, script, research(adaptive.New().WithMaxRounds(2), nil))
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateFailed || !strings.HasPrefix(s.Reason, "adaptive max_rounds:") || !strings.Contains(s.Reason, "as far as we got") {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	swarmtest.AssertScriptConsumed(t, m, id)
}

// TestAdaptiveMalformedLedgers: invalid replies are retried with the reason
// (a next_handoff outside the team is invalid too); after adaptiveTries the
// round falls back to the next team member in turn and counts as a stall.
func TestAdaptiveMalformedLedgers(t *testing.T) {
	script := scripted.Script{
		"research": {
			ledger("step"),
			scripted.Text("I think the researcher should go"),   // r1, try 1
			judge(true, false, "nobody", "x"),                   // r1, try 2
			scripted.Text("```json\n{\"is_request_satisfied\""), // r1, try 3: fallback
			judge(true, false, "writer", "write"),               // r2, valid
			satisfied(),
			scripted.Text("end"),
		},
		"researcher": {scripted.Text("r")},
		"writer":     {scripted.Text("w")},
	}
	var mu sync.Mutex
	var retries []string
	rt := spyRuntime(t, script, research(adaptive.New(), nil), func(req *model.Request) {
		if req.Agent == "research" && len(req.Messages) > 1 {
			mu.Lock()
			retries = append(retries, req.Messages[len(req.Messages)-1].Content)
			mu.Unlock()
		}
	})
	id, s := runResearch(t, rt, "the task")
	if s.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	pls := progressOf(t, rt, id)
	if !pls[0].Fallback || pls[0].NextHandoff != "researcher" || pls[0].Instruction != "the task" || pls[0].Stalls != 1 {
		t.Errorf("round 1 %+v, want the fallback to the first member with the task, counted as a stall", pls[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retries) != 2 || !strings.Contains(retries[1], `next_handoff "nobody" is not one of: researcher, writer, critic`) {
		t.Errorf("retry prompts %q", retries)
	}
	swarmtest.AssertHandoffs(t, rt, id, "researcher", "writer")
}

// TestAdaptiveEvaluator: an evaluator agent judges progress; the
// orchestrator only picks the next step and never hands work to the
// evaluator.
func TestAdaptiveEvaluator(t *testing.T) {
	script := judgedScript
	rt, m := swarmtest.NewRuntime(t, script, research(adaptive.New().WithEvaluator("critic"), nil))
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	pls := progressOf(t, rt, id)
	if len(pls) != 2 || pls[0].Evaluator != "critic" || !pls[1].Satisfied {
		t.Fatalf("progress %+v", pls)
	}
	swarmtest.AssertHandoffs(t, rt, id, "researcher")
	swarmtest.AssertScriptConsumed(t, m, id)
}

// TestAdaptiveInvalidLoops: a loop that cannot work is refused when the run
// starts.
func TestAdaptiveInvalidLoops(t *testing.T) {
	alone := swarm.Define[string, string]("alone", "", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(adaptive.New())} })
	for name, c := range map[string]struct {
		def  swarm.Definition
		want string
	}{
		"evaluator":    {research(adaptive.New().WithEvaluator("ghost"), nil), `evaluator "ghost" is not one of the swarm's agent handoffs`},
		"threshold":    {research(adaptive.New().WithStallThreshold(-1), nil), "stall_threshold -1 is negative"},
		"on exhausted": {research(adaptive.New().OnExhaustedDo("panic"), nil), `on_exhausted "panic"`},
		"no team":      {alone, "needs at least one handoff"},
		"orchestrator tools": {swarm.Define[string, string]("tooled", "", func(string) swarm.Spec {
			return swarm.Spec{Strategy: strategy.Of(adaptive.New()), Handoffs: []swarm.Handoff{swarm.ToAgent(&swarm.Agent{Name: "a"})},
				Tools: []swarm.Tool{swarm.NewTool("t", "t", func(context.Context, struct{}) (string, error) { return "", nil })}}
		}), "give its tools (absorbed agents, registry access) to a member of its team"},
		"structured swarm": {swarm.Define[string, string]("structured", "", func(string) swarm.Spec {
			sub := swarm.Define[struct {
				Q string `json:"q"`
			}, string]("sub", "", nil)
			return swarm.Spec{Strategy: strategy.Of(adaptive.New()), Handoffs: []swarm.Handoff{swarm.ToSwarm(sub)}}
		}), "swarm sub takes a structured input"},
	} {
		t.Run(name, func(t *testing.T) {
			rt, _ := swarmtest.NewRuntime(t, scripted.Script{}, c.def)
			_, err := rt.Start(swarmtest.Context(t), c.def.ID(), []byte(`"x"`))
			if !errors.Is(err, swarm.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrInvalid with %q", err, c.want)
			}
		})
	}
}

// TestAdaptiveCrashAtEveryJournalBoundary kills an adaptive run after each
// of its appends in turn and recovers it in a second runtime (the
// strategytest kit, on the memory store, SQLite and PostgreSQL): the
// outcome and the journal equal a clean run's, no journaled model response
// is asked for again, and the ledgers and counters are the clean run's
// too.
func TestAdaptiveCrashAtEveryJournalBoundary(t *testing.T) {
	script := crashScript
	lookups := &lookupLog{runs: map[string][]string{}}
	lookups.process.Store("any")
	var mu sync.Mutex
	var clean string
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{research(adaptive.New().WithStallThreshold(2), lookups)},
		Swarm:       "research",
		Input:       []byte(`"topic"`),
		Script:      script,
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			ls, rounds := ledgersOf(t, rt, id)
			stalls := stallsOf(progressOf(t, rt, id))
			shape := fmt.Sprintf("%+v %v %v", ls, rounds, stalls)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case clean == "":
				if !slices.Equal(stalls, []int{0, 1, 2, 0, 0}) {
					t.Fatalf("clean run stalls %v", stalls)
				}
				clean = shape
			case shape != clean:
				t.Errorf("recovered run's ledgers differ from a clean one's:\n got %s\nwant %s", shape, clean)
			}
		},
	})
	lookups.mu.Lock()
	defer lookups.mu.Unlock()
	if len(lookups.runs) == 0 {
		t.Fatal("the lookup tool never ran")
	}
}

// TestAdaptiveBudgetEndsWithTheBestAnswer: a budget that runs out in the
// middle of a round fails the run with the budget's reason and the last
// answer so far, without another model call.
func TestAdaptiveBudgetEndsWithTheBestAnswer(t *testing.T) {
	script := scripted.Script{
		"research": {
			ledger("step"),
			judge(true, false, "researcher", "one"),
			judge(true, false, "researcher", "two"),
		},
		"researcher": {scripted.Text("first finding")},
	}
	rt, m := swarmtest.NewRuntime(t, script, research(adaptive.New(), nil))
	id, s := runResearch(t, rt, "topic", swarm.WithBudget(swarm.Budget{ModelCalls: 4}))
	if s.State != swarm.StateFailed || !strings.Contains(s.Reason, "model calls") || !strings.HasSuffix(s.Reason, "best answer so far (researcher): first finding") {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	swarmtest.AssertScriptConsumed(t, m, id)
}

// TestAdaptiveHandsOffToASwarm: the progress ledger may name a swarm
// handoff; it runs as a child run and its result is the round's answer.
func TestAdaptiveHandsOffToASwarm(t *testing.T) {
	sub := swarm.Define[string, string]("factcheck", "checks facts", func(string) swarm.Spec { return swarm.Spec{} })
	researcher := &swarm.Agent{Name: "researcher", Description: "finds sources"}
	def := swarm.Define[string, string]("research", "", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(adaptive.New()), Handoffs: []swarm.Handoff{swarm.ToAgent(researcher), swarm.ToSwarm(sub)}}
	})
	script := scripted.Script{
		"research": {
			ledger("check the facts"),
			judge(true, false, "factcheck", "check that water is wet"),
			satisfied(),
			scripted.Text("checked"),
		},
		"factcheck": {scripted.Text("water is wet: true")},
	}
	rt, _ := swarmtest.NewRuntime(t, script, def, sub)
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	var child string
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventHandoffReturned {
			if ev.Child == "" || ev.Output != "water is wet: true" {
				t.Fatalf("handoff returned %+v, want the child run's result", ev)
			}
			child = ev.Child
		}
	}
	if child == "" {
		t.Fatal("no handoff to the swarm was recorded")
	}
	swarmtest.AssertState(t, rt, child, swarm.StateCompleted)
}

// TestAdaptiveEvaluatorPickIsValidated: with an evaluator, the
// orchestrator's pick must name a member and an instruction; a reply that
// claims the request is satisfied instead is not a pick.
func TestAdaptiveEvaluatorPickIsValidated(t *testing.T) {
	script := scripted.Script{
		"research": {
			ledger("step"),
			scripted.Text(`{"is_request_satisfied": true}`),
			scripted.Text(`{"next_handoff": "researcher", "instruction": "look"}`),
			scripted.Text("final"),
		},
		"critic": {
			scripted.Text(`{"is_request_satisfied": false, "is_in_loop": false, "is_progress_being_made": true}`),
			scripted.Text(`{"is_request_satisfied": true, "is_in_loop": false, "is_progress_being_made": true}`),
		},
		"researcher": {scripted.Text("found")},
	}
	rt, m := swarmtest.NewRuntime(t, script, research(adaptive.New().WithEvaluator("critic"), nil))
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	if pls := progressOf(t, rt, id); pls[0].NextHandoff != "researcher" || pls[0].Fallback {
		t.Fatalf("round 1 %+v, want the retried pick", pls[0])
	}
	swarmtest.AssertScriptConsumed(t, m, id)
}

// TestAdaptiveBudgetAtTheOrchestrator: a budget that runs out at the
// orchestrator's own call still ends with the best answer so far.
func TestAdaptiveBudgetAtTheOrchestrator(t *testing.T) {
	script := scripted.Script{
		"research":   {ledger("step"), judge(true, false, "researcher", "one")},
		"researcher": {scripted.Text("the finding")},
	}
	rt, _ := swarmtest.NewRuntime(t, script, research(adaptive.New(), nil))
	_, s := runResearch(t, rt, "topic", swarm.WithBudget(swarm.Budget{ModelCalls: 3}))
	if s.State != swarm.StateFailed || !strings.HasSuffix(s.Reason, "best answer so far (researcher): the finding") {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
}

// TestAdaptiveNoReviewInTheLastRound: replans used up in the last round end
// the run instead of asking for a review no round could act on.
func TestAdaptiveNoReviewInTheLastRound(t *testing.T) {
	script := scripted.Script{
		"research": {ledger("step"), judge(false, false, "researcher", "try"), scripted.Text("nothing yet")},
	}
	rt, _ := swarmtest.NewRuntime(t, script, research(adaptive.New().WithStallThreshold(1).WithMaxReplans(-1).WithMaxRounds(1), nil))
	_, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateFailed || !strings.HasPrefix(s.Reason, "adaptive max_rounds:") {
		t.Fatalf("state %s (%s), want failed for max rounds", s.State, s.Reason)
	}
}

// TestAdaptiveLedgerRepliesAreCheckedWhole: a rejected reply leaves nothing
// behind for the next try, and tool calls in a ledger reply are dropped,
// not journaled as handoffs that never happen.
func TestAdaptiveLedgerRepliesAreCheckedWhole(t *testing.T) {
	script := scripted.Script{
		"research": {
			scripted.Text(`{"plan": ["stale step"], "facts": 5}`),
			scripted.Text(`{"facts": {"given": ["x"]}}`),
			scripted.Text(`not json`),
			scripted.Tools(scripted.CallTool("handoff_to_researcher", map[string]string{"request": "sneak"})),
			judge(true, false, "writer", "write"),
			satisfied(),
			scripted.Text("end"),
		},
		"writer": {scripted.Text("w")},
	}
	rt, _ := swarmtest.NewRuntime(t, script, research(adaptive.New(), nil))
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	ledgers, _ := ledgersOf(t, rt, id)
	if !ledgers[0].Fallback || slices.Contains(ledgers[0].Plan, "stale step") {
		t.Errorf("first ledger %+v, want the fallback", ledgers[0])
	}
	swarmtest.AssertHandoffs(t, rt, id, "writer")
}

// TestAdaptiveStallWindow: the deterministic stall signals compare a round
// with the four before it: a handoff repeated four rounds later is a
// repeat, one repeated five rounds later is not.
func TestAdaptiveStallWindow(t *testing.T) {
	script := scripted.Script{
		"research": {
			ledger("research", "write"),
			judge(true, false, "researcher", "X"), // r1
			judge(true, false, "writer", "A"),     // r2
			judge(true, false, "critic", "B"),     // r3
			judge(true, false, "critic", "C"),     // r4
			judge(true, false, "researcher", "X"), // r5: r1 is four rounds back
			judge(true, false, "critic", "D"),     // r6
			judge(true, false, "writer", "A"),     // r7: r2 is five rounds back
			satisfied(),                           // r8
			scripted.Text("the report"),
		},
		"researcher": {scripted.Text("o1"), scripted.Text("o5")},
		"writer":     {scripted.Text("o2"), scripted.Text("o7")},
		"critic":     {scripted.Text("o3"), scripted.Text("o4"), scripted.Text("o6")},
	}
	rt, _ := swarmtest.NewRuntime(t, script, research(adaptive.New().WithStallThreshold(10), nil))
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	pls := progressOf(t, rt, id)
	if len(pls) != 8 {
		t.Fatalf("%d progress ledgers, want 8", len(pls))
	}
	// Round n's ledger carries the signals of round n-1.
	for _, c := range []struct {
		round int
		want  []string
	}{{5, []string{"repeat"}}, {7, nil}} {
		if got := pls[c.round].Signals; !slices.Equal(got, c.want) {
			t.Errorf("signals of round %d: %q, want %q", c.round, got, c.want)
		}
	}
}

// TestRequestOfAnAdaptiveRun: the calls of an adaptive run (its
// orchestrator's ledgers, the agents it delegates to, a replan) are
// rebuilt as sent: Runtime.Request replays the strategy to each call and
// verifies the rebuilt request against the digest journaled with it.
func TestRequestOfAnAdaptiveRun(t *testing.T) {
	script := scripted.Script{
		"research": {
			ledger("ask the researcher", "ask the writer"),
			judge(false, false, "researcher", "look at A"),
			judge(false, true, "researcher", "look at B"),
			ledger("ask the writer directly"),
			judge(true, false, "writer", "write it up"),
			satisfied(),
			scripted.Text("the report"),
		},
		"researcher": {scripted.Text("a"), scripted.Text("b")},
		"writer":     {scripted.Text("a report")},
	}
	rt, _ := swarmtest.NewRuntime(t, script, research(adaptive.New().WithStallThreshold(2), nil))
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	if n := verifyRequests(t, rt, id); n != 9 {
		t.Errorf("%d model calls verified, want 9", n)
	}
}

// verifyRequests rebuilds the request of every model call of run id and
// its child runs with Runtime.Request, wants each verified, and returns
// how many there were.
func verifyRequests(t *testing.T, rt *swarm.Runtime, id string) int {
	t.Helper()
	n := 0
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type != swarm.EventModelResponse {
			continue
		}
		got, err := rt.Request(swarmtest.Context(t), id, ev.Key)
		if err != nil {
			t.Fatalf("Request(%s): %v", ev.Key, err)
		}
		if got.Check != inspect.Verified {
			t.Errorf("%s: check %q, want verified", ev.Key, got.Check)
		}
		n++
	}
	return n
}
