package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/workflow"
)

func agent(name string) *swarm.Agent {
	return &swarm.Agent{Name: name, Description: "the " + name, Instructions: "You are the " + name + "."}
}

// run starts def with input on a fresh in-memory runtime playing script
// and waits until it stops moving.
func run(t *testing.T, def swarm.Definition, script scripted.Script, input string) (*swarm.Runtime, string, swarm.Status) {
	t.Helper()
	rt, _ := swarmtest.NewRuntime(t, script, def)
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, def.ID(), json.RawMessage(input))
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return rt, id, st
}

// keys lists the keys of run id's records of type typ, in order.
func keys(t *testing.T, rt *swarm.Runtime, id string, typ swarm.EventType) []string {
	var out []string
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == typ {
			out = append(out, ev.Key)
		}
	}
	return out
}

type verdict struct {
	OK   bool   `json:"ok"`
	Note string `json:"note,omitempty"`
}

// A sequence, a parallel join and a bounded loop over agents and Go
// functions: outputs flow from step to step and each node's record is
// keyed by its name.
func TestPipeline(t *testing.T) {
	upper := workflow.Func("upper", func(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil })
	count := workflow.Func("count", func(_ context.Context, s string) (string, error) { return fmt.Sprint(len(s)), nil })
	both := workflow.Parallel("both", workflow.Join{}, workflow.Agent[string, string](agent("critic")), upper)
	joinAll := workflow.Func("glue", func(_ context.Context, parts []string) (string, error) { return strings.Join(parts, "|"), nil })
	grow := workflow.Func("grow", func(_ context.Context, s string) (string, error) { return s + "+", nil })
	polish := workflow.Loop("polish", 5, workflow.UntilFunc(func(s string) bool { return strings.HasSuffix(s, "++") }), grow)
	step := workflow.Then(workflow.Then(workflow.Then(workflow.Agent[string, string](agent("writer")), both), joinAll), workflow.Then(polish, count))
	def := workflow.Define("pipeline", "writes and polishes", step)
	rt, id, st := run(t, def, scripted.Script{
		"writer": {scripted.Text("draft")},
		"critic": {scripted.Text("fine")},
	}, `"bees"`)
	if st.State != swarm.StateCompleted || string(st.Result) != `"12"` {
		t.Fatalf("state %s (%s) result %s, want completed with \"12\" (len of fine|DRAFT++)", st.State, st.Reason, st.Result)
	}
	got := strings.Join(keys(t, rt, id, swarm.EventRecorded), " ")
	if want := "both/upper glue polish/1/grow polish/2/grow count"; got != want {
		t.Errorf("recorded %q, want %q", got, want)
	}
	handoffs := strings.Join(keys(t, rt, id, swarm.EventHandoffStarted), " ")
	if !strings.Contains(handoffs, "writer/call/next") || !strings.Contains(handoffs, "both/critic/call/next") {
		t.Errorf("handoffs %q: want writer's and both/critic's", handoffs)
	}
}

// A loop that does not get done ends at its bound with a reason.
func TestLoopBound(t *testing.T) {
	var rounds atomic.Int64
	grow := workflow.Func("grow", func(_ context.Context, n int) (int, error) { rounds.Add(1); return n + 1, nil })
	def := workflow.Define("counting", "counts", workflow.Loop("up", 3, workflow.UntilFunc(func(int) bool { return false }), grow))
	_, _, st := run(t, def, nil, `0`)
	if st.State != swarm.StateFailed || st.Reason != "loop up: not done after 3 rounds (its bound)" {
		t.Fatalf("state %s (%s), want failed at the loop's bound", st.State, st.Reason)
	}
	if n := rounds.Load(); n != 3 {
		t.Errorf("%d rounds ran, want 3", n)
	}
}

// An evaluator agent ends a loop when it answers DONE.
func TestLoopEvaluator(t *testing.T) {
	edit := workflow.Agent[string, string](agent("editor"))
	def := workflow.Define("editing", "edits", workflow.Loop("edit", 4, workflow.UntilAgent[string](agent("judge")), edit))
	rt, id, st := run(t, def, scripted.Script{
		"editor": {scripted.Text("v1"), scripted.Text("v2")},
		"judge":  {scripted.Text("more please"), scripted.Text("Done. Good.")},
	}, `"x"`)
	if st.State != swarm.StateCompleted || string(st.Result) != `"v2"` {
		t.Fatalf("state %s (%s) result %s, want completed with v2", st.State, st.Reason, st.Result)
	}
	got := strings.Join(keys(t, rt, id, swarm.EventHandoffStarted), " ")
	if want := "edit/1/editor/call/next edit/1/until/call/next edit/2/editor/call/next edit/2/until/call/next"; got != want {
		t.Errorf("handoffs %q, want %q", got, want)
	}
}

// The evaluator's answer on a round that is not done reaches the next
// round: after the input of its agent nodes, and to its Go functions by
// workflow.Feedback; the first round has none.
func TestLoopEvaluatorFeedback(t *testing.T) {
	var seen []string
	note := workflow.Func("note", func(ctx context.Context, s string) (string, error) {
		f, ok := workflow.Feedback(ctx)
		seen = append(seen, fmt.Sprintf("%v:%s", ok, f))
		return s, nil
	})
	body := workflow.Then(workflow.Agent[string, string](agent("editor")), note)
	def := workflow.Define("editing", "edits", workflow.Loop("edit", 4, workflow.UntilAgent[string](agent("judge")), body))
	rt, id, st := run(t, def, scripted.Script{
		"editor": {scripted.Text("v1"), scripted.Text("v2"), scripted.Text("v3")},
		"judge":  {scripted.Text("Too long: cut the intro."), scripted.Text("Still no title."), scripted.Text("DONE")},
	}, `"x"`)
	if st.State != swarm.StateCompleted || string(st.Result) != `"v3"` {
		t.Fatalf("state %s (%s) result %s, want completed with v3", st.State, st.Reason, st.Result)
	}
	var requests []string
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventHandoffStarted && ev.Target == "editor" {
			requests = append(requests, ev.Request)
		}
	}
	want := []string{"x", "v1\n\nFeedback on the previous round: Too long: cut the intro.", "v2\n\nFeedback on the previous round: Still no title."}
	if !slices.Equal(requests, want) {
		t.Errorf("the editor was asked %q, want %q", requests, want)
	}
	if want := []string{"false:", "true:Too long: cut the intro.", "true:Still no title."}; !slices.Equal(seen, want) {
		t.Errorf("Feedback in the Go function: %q, want %q", seen, want)
	}
}

// An LLM router that answers with no route's name is asked again, a
// bounded number of times.
func TestRouteRouterRetries(t *testing.T) {
	a := workflow.Func("alpha", func(_ context.Context, s string) (string, error) { return "A:" + s, nil })
	b := workflow.Func("beta", func(_ context.Context, s string) (string, error) { return "B:" + s, nil })
	def := workflow.Define("routing", "routes", workflow.Route("pick", workflow.PickAgent[string](agent("router"), 3), a, b))
	_, _, st := run(t, def, scripted.Script{"router": {scripted.Text("gamma"), scripted.Text(" beta.")}}, `"x"`)
	if st.State != swarm.StateCompleted || string(st.Result) != `"B:x"` {
		t.Fatalf("state %s (%s) result %s, want B:x", st.State, st.Reason, st.Result)
	}
	_, _, st = run(t, def, scripted.Script{"router": {scripted.Text("a"), scripted.Text("b"), scripted.Text("c")}}, `"x"`)
	if st.State != swarm.StateFailed || !strings.Contains(st.Reason, "named no route in 3 tries") {
		t.Fatalf("state %s (%s), want failed after 3 tries", st.State, st.Reason)
	}
	fn := workflow.Define("routing2", "routes", workflow.Route("pick", workflow.PickFunc(func(s string) string { return s }), a, b))
	if _, _, st = run(t, fn, nil, `"alpha"`); string(st.Result) != `"A:alpha"` {
		t.Fatalf("state %s (%s) result %s, want A:alpha", st.State, st.Reason, st.Result)
	}
}

// A graph whose cycle never ends stops at its bound with a reason.
func TestGraphCycleBound(t *testing.T) {
	var ran atomic.Int64
	ping := workflow.Func("ping", func(_ context.Context, n int) (int, error) { ran.Add(1); return n + 1, nil })
	pong := workflow.Func("pong", func(_ context.Context, n int) (int, error) { ran.Add(1); return n + 1, nil })
	g := workflow.NewGraph[int, int]("rally", "ping", 5).Add(workflow.Node(ping), workflow.Node(pong)).Edge("ping", "pong").Edge("pong", "ping")
	rt, id, st := run(t, workflow.Define("tennis", "plays", g.Step()), nil, `0`)
	if st.State != swarm.StateFailed || st.Reason != "graph rally: stopped at its bound of 5 steps before running node pong again" {
		t.Fatalf("state %s (%s), want failed at the graph's bound", st.State, st.Reason)
	}
	if n := ran.Load(); n != 5 {
		t.Errorf("%d nodes ran, want 5", n)
	}
	got := strings.Join(keys(t, rt, id, swarm.EventRecorded), " ")
	if want := "rally/ping rally/pong rally/2/ping rally/2/pong rally/3/ping"; got != want {
		t.Errorf("recorded %q, want %q", got, want)
	}
}

// Conditional edges pick the next node from a node's output.
func TestGraphConditions(t *testing.T) {
	check := workflow.Func("check", func(_ context.Context, n int) (verdict, error) { return verdict{OK: n > 2, Note: fmt.Sprint(n)}, nil })
	bump := workflow.Func("bump", func(_ context.Context, v verdict) (int, error) {
		var n int
		fmt.Sscan(v.Note, &n)
		return n + 1, nil
	})
	done := workflow.Func("done", func(_ context.Context, v verdict) (string, error) { return "ok at " + v.Note, nil })
	g := workflow.NewGraph[int, string]("g", "check", 0).Add(workflow.Node(check), workflow.Node(bump), workflow.Node(done)).
		EdgeIf("check", "done", workflow.FieldEquals("ok", true)).Edge("check", "bump").Edge("bump", "check")
	_, _, st := run(t, workflow.Define("conditions", "counts to 3", g.Step()), nil, `1`)
	if st.State != swarm.StateCompleted || string(st.Result) != `"ok at 3"` {
		t.Fatalf("state %s (%s) result %s, want ok at 3", st.State, st.Reason, st.Result)
	}
}

// A human-input node asks with its JSON schema, refuses an answer that
// does not fit it with the reason, and takes the next.
func TestHumanInput(t *testing.T) {
	ask := workflow.Human[string, verdict]("approve", 2, func(s string) string { return "Approve " + s + "?" })
	def := workflow.Define("approval", "asks", ask)
	rt, id, st := run(t, def, nil, `"the draft"`)
	if st.State != swarm.StatePaused || st.Reason != "Approve the draft?" {
		t.Fatalf("state %s (%s), want paused at the question", st.State, st.Reason)
	}
	var pause swarm.Event
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventPaused {
			pause = ev
		}
	}
	if pause.Key != "approve" || pause.Kind != "input" || !strings.Contains(pause.Context, `"ok"`) {
		t.Fatalf("pause %+v: want key approve, kind input and the schema of verdict", pause)
	}
	ctx := swarmtest.Context(t)
	if err := rt.Resume(ctx, id, `{"ok": "yes"}`); err != nil {
		t.Fatal(err)
	}
	st, _ = rt.Wait(ctx, id)
	if st.State != swarm.StatePaused || !strings.Contains(st.Reason, "the answer was refused") {
		t.Fatalf("state %s (%s), want asked again with the reason", st.State, st.Reason)
	}
	if err := rt.Resume(ctx, id, `{"ok": true, "note": "ship"}`); err != nil {
		t.Fatal(err)
	}
	if st, _ = rt.Wait(ctx, id); st.State != swarm.StateCompleted || string(st.Result) != `{"ok":true,"note":"ship"}` {
		t.Fatalf("state %s (%s) result %s, want the valid answer", st.State, st.Reason, st.Result)
	}
	// Out of asks: the node fails with the validation error.
	rt, id, _ = run(t, def, nil, `"the draft"`)
	for _, a := range []string{`nope`, `{"ok": 1}`} {
		if err := rt.Resume(ctx, id, a); err != nil {
			t.Fatal(err)
		}
		st, _ = rt.Wait(ctx, id)
	}
	if st.State != swarm.StateFailed || !strings.Contains(st.Reason, "step approve: no valid answer after 2 asks") {
		t.Fatalf("state %s (%s), want failed after 2 asks", st.State, st.Reason)
	}
}

// A failing node is retried under new keys; a timeout is a failure too.
func TestRetryAndTimeout(t *testing.T) {
	var calls atomic.Int64
	flaky := workflow.Func("flaky", func(ctx context.Context, s string) (string, error) {
		if calls.Add(1) < 3 {
			return "", errors.New("not yet")
		}
		return s + "!", nil
	}).Retry(2)
	rt, id, st := run(t, workflow.Define("retrying", "retries", flaky), nil, `"x"`)
	if st.State != swarm.StateCompleted || string(st.Result) != `"x!"` {
		t.Fatalf("state %s (%s) result %s, want x!", st.State, st.Reason, st.Result)
	}
	if got := strings.Join(keys(t, rt, id, swarm.EventRecorded), " "); got != "flaky flaky~2 flaky~3" {
		t.Errorf("recorded %q, want one key per attempt", got)
	}
	slow := workflow.Func("slow", func(ctx context.Context, s string) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}).Timeout(20 * time.Millisecond).Retry(1)
	rt, id, st = run(t, workflow.Define("sleepy", "times out", slow), nil, `"x"`)
	if st.State != swarm.StateFailed || !strings.Contains(st.Reason, "step slow~2 timed out after 20ms") {
		t.Fatalf("state %s (%s), want failed by the second attempt's timeout", st.State, st.Reason)
	}
	if got := strings.Join(keys(t, rt, id, swarm.EventRecorded), " "); got != "slow/deadline slow/timeout slow~2/deadline slow~2/timeout" {
		t.Errorf("recorded %q, want each attempt's deadline and timeout decision", got)
	}
}

// A first join takes the first branch to succeed and stops the others;
// the decision is journaled, and a quorum join takes the first N.
func TestJoins(t *testing.T) {
	fast := workflow.Func("fast", func(_ context.Context, s string) (string, error) { return "fast " + s, nil })
	broken := workflow.Func("broken", func(_ context.Context, s string) (string, error) { return "", errors.New("broken") })
	stuck := workflow.Func("stuck", func(ctx context.Context, s string) (string, error) { <-ctx.Done(); return "", ctx.Err() })
	first := workflow.Define("firsts", "races", workflow.Parallel("race", workflow.Join{Mode: workflow.First}, stuck, broken, fast))
	rt, id, st := run(t, first, nil, `"x"`)
	if st.State != swarm.StateCompleted || string(st.Result) != `["fast x"]` {
		t.Fatalf("state %s (%s) result %s, want [fast x]", st.State, st.Reason, st.Result)
	}
	var decision string
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Key == "race/join" {
			decision = string(ev.Result)
		}
	}
	if decision != "[2]" {
		t.Errorf("journaled decision %q, want [2]", decision)
	}
	quorum := workflow.Define("quorums", "votes", workflow.Parallel("vote", workflow.Join{Mode: workflow.Quorum, N: 2}, broken, fast, stuck,
		workflow.Func("slow", func(_ context.Context, s string) (string, error) { return "slow " + s, nil })))
	if _, _, st = run(t, quorum, nil, `"x"`); string(st.Result) != `["fast x","slow x"]` {
		t.Fatalf("state %s (%s) result %s, want fast and slow", st.State, st.Reason, st.Result)
	}
	tooFew := workflow.Define("toofew", "votes", workflow.Parallel("vote", workflow.Join{Mode: workflow.Quorum, N: 2}, broken, fast))
	if _, _, st = run(t, tooFew, nil, `"x"`); st.State != swarm.StateFailed || !strings.Contains(st.Reason, "1 of 2 branches failed, 2 needed") {
		t.Fatalf("state %s (%s), want failed: quorum out of reach", st.State, st.Reason)
	}
	all := workflow.Define("alls", "all", workflow.Parallel("every", workflow.Join{}, broken, fast))
	if _, _, st = run(t, all, nil, `"x"`); st.State != swarm.StateFailed || !strings.Contains(st.Reason, "broken: ") {
		t.Fatalf("state %s (%s), want failed by the broken branch", st.State, st.Reason)
	}
	tolerant := workflow.Define("tolerant", "all", workflow.Parallel("every", workflow.Join{Tolerate: true}, broken, fast))
	if _, _, st = run(t, tolerant, nil, `"x"`); string(st.Result) != `["fast x"]` {
		t.Fatalf("state %s (%s) result %s, want the branch that did not fail", st.State, st.Reason, st.Result)
	}
	optional := workflow.Define("optional", "all", workflow.Parallel("every", workflow.Join{}, broken.Optional(), fast))
	if _, _, st = run(t, optional, nil, `"x"`); string(st.Result) != `["fast x"]` {
		t.Fatalf("state %s (%s) result %s, want the branch that did not fail", st.State, st.Reason, st.Result)
	}
	required := workflow.Define("required", "all", workflow.Parallel("every", workflow.Join{}, broken, fast.Optional()))
	if _, _, st = run(t, required, nil, `"x"`); st.State != swarm.StateFailed {
		t.Fatalf("state %s (%s), want failed by the required branch", st.State, st.Reason)
	}
}

// Mistakes in a workflow's composition are refused when it is made.
func TestCompositionMistakes(t *testing.T) {
	f := workflow.Func("f", func(_ context.Context, s string) (string, error) { return s, nil })
	for name, err := range map[string]error{
		"duplicate": func() error { _, err := workflow.New("w", "", workflow.Then(f, f)); return err }(),
		"digits":    func() error { _, err := workflow.New("w", "", f.Named("42")); return err }(),
		"edge": func() error {
			_, err := workflow.New("w", "", workflow.NewGraph[string, string]("g", "f", 0).Add(workflow.Node(f)).Edge("f", "h").Step())
			return err
		}(),
		"start": func() error {
			_, err := workflow.New("w", "", workflow.NewGraph[string, string]("g", "x", 0).Add(workflow.Node(f)).Step())
			return err
		}(),
		"quorum": func() error {
			_, err := workflow.New("w", "", workflow.Parallel("p", workflow.Join{Mode: workflow.Quorum, N: 3}, f))
			return err
		}(),
		"loop": func() error {
			_, err := workflow.New("w", "", workflow.Loop("l", 0, workflow.UntilFunc(func(string) bool { return true }), f))
			return err
		}(),
		"agents": func() error {
			_, err := workflow.New("w", "", workflow.Then(workflow.Agent[string, string](agent("a")), workflow.Agent[string, string](&swarm.Agent{Name: "a", Instructions: "Other."}).Named("b")))
			return err
		}(),
	} {
		if !errors.Is(err, swarm.ErrInvalid) {
			t.Errorf("%s: New returned %v, want an ErrInvalid", name, err)
		}
	}
}

// 1,000 parallel branches each run their node once and join in order.
func TestThousandBranches(t *testing.T) {
	var ran atomic.Int64
	square := workflow.Func("square", func(_ context.Context, n int) (int, error) { ran.Add(1); return n * n, nil })
	sum := workflow.Func("sum", func(_ context.Context, ns []int) (int, error) {
		total := 0
		for _, n := range ns {
			total += n
		}
		return total, nil
	})
	def := workflow.Define("squares", "sums squares", workflow.Then(workflow.ForEach("each", square), sum))
	in := make([]int, 1000)
	for i := range in {
		in[i] = i
	}
	raw, _ := json.Marshal(in)
	rt, id, st := run(t, def, nil, string(raw))
	if st.State != swarm.StateCompleted || string(st.Result) != "332833500" {
		t.Fatalf("state %s (%s) result %s, want completed with 332833500", st.State, st.Reason, st.Result)
	}
	if n := ran.Load(); n != 1000 {
		t.Errorf("%d branches ran, want 1000", n)
	}
	seen := map[string]bool{}
	for _, k := range keys(t, rt, id, swarm.EventRecorded) {
		seen[k] = true
	}
	if len(seen) != 1001 || !seen["each/0/square"] || !seen["each/999/square"] || !seen["sum"] {
		t.Errorf("%d distinct recorded keys, want 1001 (each/<i>/square and sum)", len(seen))
	}
}

// Each drive has an invoke_workflow span under the run's span, and each
// node a span under it that names the node; an agent's span is below its
// node's.
func TestSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{"writer": {scripted.Text("hi")}}), TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	up := workflow.Func("up", func(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil })
	def := workflow.Define("traced", "traces", workflow.Then(workflow.Agent[string, string](agent("writer")), up))
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "traced", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.Wait(ctx, id); st.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", st.State, st.Reason)
	}
	tp.ForceFlush(ctx)
	byName := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byName[s.Name] = s
	}
	wf, ok := byName["invoke_workflow traced"]
	if !ok {
		t.Fatalf("no invoke_workflow span in %v", slices.Collect(maps.Keys(byName)))
	}
	if run := byName["invoke_agent traced"]; wf.Parent.SpanID() != run.SpanContext.SpanID() {
		t.Errorf("invoke_workflow's parent is not the run's span")
	}
	attrs := map[string]string{}
	for _, a := range wf.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs["gen_ai.operation.name"] != "invoke_workflow" || attrs["gen_ai.workflow.name"] != "traced" || attrs["gen_ai.conversation.id"] != id {
		t.Errorf("invoke_workflow attributes %v", attrs)
	}
	for _, node := range []string{"writer", "up"} {
		s, ok := byName["workflow_node "+node]
		if !ok || s.Parent.SpanID() != wf.SpanContext.SpanID() {
			t.Errorf("no span workflow_node %s under invoke_workflow", node)
		}
	}
	if h := byName["execute_tool handoff_to_writer"]; h.Parent.SpanID() != byName["workflow_node writer"].SpanContext.SpanID() ||
		byName["invoke_agent writer"].Parent.SpanID() != h.SpanContext.SpanID() {
		t.Errorf("the writer's handoff and invoke_agent spans are not under its node's span")
	}
}

// A fork at a node reuses the nodes before it and runs it and the rest
// again.
func TestForkAtNode(t *testing.T) {
	var ran [3]atomic.Int64
	step := func(i int) workflow.Step[int, int] {
		return workflow.Func("n"+fmt.Sprint(i), func(_ context.Context, n int) (int, error) { ran[i].Add(1); return n*10 + i, nil })
	}
	def := workflow.Define("forked", "three steps", workflow.Then(workflow.Then(step(0), step(1)), step(2)))
	rt, id, st := run(t, def, nil, `5`)
	if string(st.Result) != "5012" {
		t.Fatalf("state %s (%s) result %s, want 5012", st.State, st.Reason, st.Result)
	}
	ctx := swarmtest.Context(t)
	fork, err := rt.Fork(ctx, id, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if st, err = rt.Wait(ctx, fork); err != nil || string(st.Result) != "5012" {
		t.Fatalf("fork: %s %s %v", st.State, st.Result, err)
	}
	if a, b, c := ran[0].Load(), ran[1].Load(), ran[2].Load(); a != 1 || b != 2 || c != 2 {
		t.Errorf("nodes ran %d, %d and %d times, want 1, 2 and 2", a, b, c)
	}
}

// The run tree's limits count a workflow's nodes: a workflow of more Go
// functions than the tool call limit fails with a reason naming it.
func TestLimitsCountNodes(t *testing.T) {
	def := workflow.Define("long", "five steps", chain(5))
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(nil), MaxToolCalls: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "long", json.RawMessage(`0`))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := rt.Wait(ctx, id)
	if st.State != swarm.StateFailed || !strings.Contains(st.Reason, "tool call") {
		t.Fatalf("state %s (%s), want failed at the tool call limit", st.State, st.Reason)
	}
	if n := len(keys(t, rt, id, swarm.EventRecorded)); n != 3 {
		t.Errorf("%d nodes recorded, want 3", n)
	}
}

// Guardrails given to a workflow check the agents it runs.
func TestGuardrails(t *testing.T) {
	var checked atomic.Int64
	secret := guardrail.Guardrail{Name: "nosecrets", Points: []guardrail.Point{guardrail.Output}, Check: func(_ context.Context, c guardrail.Check) (guardrail.Verdict, error) {
		checked.Add(1)
		if strings.Contains(c.Text, "secret") {
			return guardrail.Verdict{Action: guardrail.Tripwire, Message: "a secret"}, nil
		}
		return guardrail.Verdict{Action: guardrail.Allow}, nil
	}}
	def := workflow.Define("guarded", "writes", workflow.Agent[string, string](agent("writer")), workflow.WithGuardrails(secret))
	_, _, st := run(t, def, scripted.Script{"writer": {scripted.Text("the secret is 42")}}, `"x"`)
	if st.State != swarm.StateFailed || !strings.Contains(st.Reason, "guardrail nosecrets: a secret") {
		t.Fatalf("state %s (%s), want failed by the guardrail", st.State, st.Reason)
	}
	if checked.Load() == 0 {
		t.Error("the guardrail checked nothing")
	}
}

// Describe gives a workflow's shape: every step in order with its parent
// and a graph's edges, and Node reads a journal key of a round, a visit or
// an attempt as its node's.
func TestDescribe(t *testing.T) {
	inc := func(name string) workflow.Step[int, int] {
		return workflow.Func(name, func(_ context.Context, n int) (int, error) { return n + 1, nil })
	}
	g := workflow.NewGraph[int, int]("flow", "ping", 0).Add(workflow.Node(inc("ping")), workflow.Node(inc("pong"))).Edge("ping", "pong")
	step := workflow.Then(workflow.Then(inc("fetch").Retry(2),
		workflow.Loop("polish", 3, workflow.UntilFunc(func(int) bool { return true }), inc("edit"))), g.Step())
	def := workflow.Define("described", "a shape", step)
	shape, ok := workflow.Describe(def)
	if !ok || shape.ID != "described" {
		t.Fatalf("Describe: %v %+v", ok, shape)
	}
	var got []string
	for _, n := range shape.Nodes {
		got = append(got, fmt.Sprintf("%s:%s<%s>%v", n.Key, n.Kind, n.Parent, n.Next))
	}
	want := "fetch:func<>[] polish:loop<>[] polish/edit:func<polish>[] flow:graph<>[] flow/ping:func<flow>[flow/pong] flow/pong:func<flow>[]"
	if strings.Join(got, " ") != want {
		t.Errorf("shape\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	for key, want := range map[string]string{
		"fetch~2": "fetch own", "polish/2/edit": "polish/edit own", "polish/2/until": "polish inside",
		"flow/3/ping": "flow/ping own", "flow/pong/deadline": "flow/pong inside", "start": " inside",
	} {
		node, own := shape.Node(key)
		if got := node + map[bool]string{true: " own", false: " inside"}[own]; got != want {
			t.Errorf("Node(%q) = %q, want %q", key, got, want)
		}
	}
	if _, ok := workflow.Describe(swarm.Define[string, string]("plain", "no workflow", nil)); ok {
		t.Error("Describe of a plain swarm: ok")
	}
}

// Describe says what a drawing needs beyond the order: which branch of a
// parallel step or a route each step is on, the join, a loop's bound and
// evaluator, a route's router, a graph's start, bound and the conditions
// of its edges.
func TestDescribeDetails(t *testing.T) {
	id := func(name string) workflow.Step[string, string] {
		return workflow.Func(name, func(_ context.Context, s string) (string, error) { return s, nil })
	}
	both := workflow.Parallel("both", workflow.Join{Mode: workflow.Quorum, N: 1}, id("a"), workflow.Then(id("b1"), id("b2")))
	pick := workflow.Route("pick", workflow.PickAgent[string](agent("router"), 1), id("x"), id("y"))
	polish := workflow.Loop("polish", 4, workflow.UntilAgent[string](agent("judge")), id("edit"))
	g := workflow.NewGraph[string, string]("flow", "ask", 7).Add(workflow.Node(id("draft")), workflow.Node(id("ask"))).
		EdgeLabeled("ask", "draft", "refused", workflow.FieldEquals("ok", false)).Edge("ask", "draft").EdgeIf("draft", "ask", workflow.FieldEquals("n", 1))
	glue := workflow.Func("glue", func(_ context.Context, s []string) (string, error) { return strings.Join(s, ""), nil })
	def := workflow.Define("detailed", "details", workflow.Then(workflow.Then(both, glue), workflow.Then(pick, workflow.Then(polish, g.Step()))))
	shape, _ := workflow.Describe(def)
	var got []string
	for _, n := range shape.Nodes {
		got = append(got, fmt.Sprintf("%s:b%d:%s:%d:%s:%v:%v:%v", n.Key, n.Branch, n.Join, n.Bound, n.Agent, n.Start, n.Next, n.Labels))
	}
	want := []string{
		"both:b0:quorum 1:0::false:[]:[]", "both/a:b0::0::false:[]:[]", "both/b1:b1::0::false:[]:[]", "both/b2:b1::0::false:[]:[]",
		"glue:b0::0::false:[]:[]", "pick:b0::0:router:false:[]:[]", "pick/x:b0::0::false:[]:[]", "pick/y:b1::0::false:[]:[]",
		"polish:b0::4:judge:false:[]:[]", "polish/edit:b0::0::false:[]:[]",
		"flow:b0::7::false:[]:[]", "flow/draft:b0::0::false:[flow/ask]:[if]", "flow/ask:b0::0::true:[flow/draft flow/draft]:[refused otherwise]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("shape\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
