package strategy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
)

// editorial is a strategy written against the public seam only: a writer
// drafts, a critic reviews until it says "ok" (at most rounds reviews),
// two translators work in parallel, a recorded side effect stamps the
// piece, and a human approves it.
type editorial struct {
	rounds int
	stamps *atomic.Int64 // counts the side effect's executions
}

func (s editorial) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	var topic string
	if err := json.Unmarshal(d.Input(), &topic); err != nil {
		return nil, &strategy.Failure{Reason: "input: " + err.Error()}
	}
	draft, err := d.Delegate(ctx, "draft/1", "writer", topic)
	if err != nil {
		return nil, err
	}
	for i := 1; ; i++ {
		verdict, err := d.Delegate(ctx, "review/"+strconv.Itoa(i), "critic", draft)
		if err != nil {
			return nil, err
		}
		if verdict == "ok" {
			break
		}
		if i == s.rounds {
			return nil, &strategy.Failure{Reason: "no agreement after " + strconv.Itoa(i) + " reviews"}
		}
		if draft, err = d.Delegate(ctx, "draft/"+strconv.Itoa(i+1), "writer", "revise: "+verdict); err != nil {
			return nil, err
		}
	}
	langs := []string{"french", "german"}
	out := make([]string, len(langs))
	for _, err := range d.Parallel(ctx, len(langs), func(ctx context.Context, i int) error {
		var err error
		out[i], err = d.Delegate(ctx, "translate/"+langs[i], langs[i], draft)
		return err
	}) {
		if err != nil {
			return nil, err
		}
	}
	stamp, err := d.Record(ctx, "stamp", "stamp", func(context.Context) (json.RawMessage, error) {
		s.stamps.Add(1)
		return json.Marshal("S-" + topic)
	})
	if err != nil {
		return nil, err
	}
	answer, err := d.Await(ctx, "approve", strategy.Question{Reason: "Publish " + draft + "?", Kind: "approval"})
	if err != nil {
		return nil, err
	}
	return json.Marshal(fmt.Sprintf("%s [%s] %s #%s: %s", draft, strings.Join(out, ", "), d.Agent(), stamp, answer))
}

func editorialSwarm(stamps *atomic.Int64) (swarm.Definition, scripted.Script) {
	agent := func(name string) swarm.Handoff {
		return swarm.ToAgent(&swarm.Agent{Name: name, Description: "the " + name, Instructions: "You are the " + name + "."})
	}
	def := swarm.Define[string, string]("editorial", "writes, reviews and translates", func(string) swarm.Spec {
		return swarm.Spec{
			Handoffs: []swarm.Handoff{agent("writer"), agent("critic"), agent("french"), agent("german")},
			Strategy: strategy.Of(editorial{rounds: 3, stamps: stamps}),
		}
	})
	return def, scripted.Script{
		"writer": {scripted.Text("draft one"), scripted.Text("draft two")},
		"critic": {scripted.Text("too short"), scripted.Text("ok")},
		"french": {scripted.Text("brouillon")},
		"german": {scripted.Text("Entwurf")},
	}
}

// A strategy written against the public seam passes the conformance kit:
// killed after every journal record and recovered, it ends the same, with
// the same journal, and no recorded step runs again.
func TestStrategyConformance(t *testing.T) {
	var stamps atomic.Int64
	def, script := editorialSwarm(&stamps)
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{def},
		Swarm:       "editorial",
		Input:       json.RawMessage(`"bees"`),
		Script:      script,
		Answers:     []string{"yes"},
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			st, err := rt.Status(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if want := `"draft two [brouillon, Entwurf] editorial #\"S-bees\": yes"`; string(st.Result) != want {
				t.Errorf("result %s, want %s", st.Result, want)
			}
		},
	})
}

// start runs def on a fresh in-memory runtime with m and waits for it to
// stop moving (ended or paused).
func startSeam(t *testing.T, def swarm.Definition, m model.Model, input string, cfg func(*swarm.Config)) (*swarm.Runtime, string, swarm.Status) {
	t.Helper()
	c := swarm.Config{Store: memory.New(), Model: m}
	if cfg != nil {
		cfg(&c)
	}
	rt, err := swarm.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
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

// The run pauses at Await and the answer reaches the strategy; the
// recorded side effect ran once although Drive ran twice.
func TestStrategyAwaitAndRecord(t *testing.T) {
	var stamps atomic.Int64
	def, script := editorialSwarm(&stamps)
	rt, id, st := startSeam(t, def, scripted.New(script), `"bees"`, nil)
	if st.State != swarm.StatePaused || !strings.Contains(st.Reason, "Publish draft two?") {
		t.Fatalf("state %s (%s), want paused at the approval", st.State, st.Reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rt.Resume(ctx, id, "ship it"); err != nil {
		t.Fatal(err)
	}
	if st, _ = rt.Wait(ctx, id); st.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s), want completed", st.State, st.Reason)
	}
	if want := `"draft two [brouillon, Entwurf] editorial #\"S-bees\": ship it"`; string(st.Result) != want {
		t.Errorf("result %s, want %s", st.Result, want)
	}
	if n := stamps.Load(); n != 1 {
		t.Errorf("the recorded side effect ran %d times, want 1", n)
	}
	var recorded int
	for ev, err := range rt.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == swarm.EventRecorded && ev.Key == "stamp" && ev.Kind == "stamp" && string(ev.Result) == `"S-bees"` {
			recorded++
		}
	}
	if recorded != 1 {
		t.Errorf("%d stamp records, want 1", recorded)
	}
}

// A Failure ends the run with its reason.
func TestStrategyFailure(t *testing.T) {
	var stamps atomic.Int64
	def, _ := editorialSwarm(&stamps)
	m := scripted.New(scripted.Script{"writer": {scripted.Text("a"), scripted.Text("b"), scripted.Text("c")},
		"critic": {scripted.Text("no"), scripted.Text("no"), scripted.Text("no")}})
	_, _, st := startSeam(t, def, m, `"bees"`, nil)
	if st.State != swarm.StateFailed || st.Reason != "no agreement after 3 reviews" {
		t.Fatalf("state %s (%s), want failed: no agreement after 3 reviews", st.State, st.Reason)
	}
}

// loopForever is a strategy without a bound of its own.
type loopForever struct{ model bool }

func (s loopForever) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	for i := 0; ; i++ {
		key := "step/" + strconv.Itoa(i)
		var err error
		if s.model {
			_, err = d.Model(ctx, key, []model.Message{{Role: model.RoleUser, Content: "again"}})
		} else {
			_, err = d.Record(ctx, key, "tick", func(context.Context) (json.RawMessage, error) { return json.RawMessage("1"), nil })
		}
		if err != nil {
			return nil, err
		}
	}
}

// A strategy that never stops is ended by the run tree's limits: model
// calls by the model call limit, recorded functions by the tool limit.
func TestStrategyBoundedByLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model bool
		want  string
	}{{"model", true, "model calls 25 of 25"}, {"record", false, "tool calls 30 of 30"}} {
		t.Run(tc.name, func(t *testing.T) {
			def := swarm.Define[string, string]("forever", "never stops", func(string) swarm.Spec {
				return swarm.Spec{Strategy: strategy.Of(loopForever{model: tc.model}), NoBuiltins: true}
			})
			steps := make([]scripted.Step, 40)
			for i := range steps {
				steps[i] = scripted.Text("more")
			}
			_, id, st := startSeam(t, def, scripted.New(scripted.Script{"forever": steps}), `"go"`, func(c *swarm.Config) {
				c.MaxModelCalls, c.MaxToolCalls = 25, 30
			})
			if st.State != swarm.StateFailed || !strings.Contains(st.Reason, tc.want) {
				t.Fatalf("run %s: state %s (%s), want failed naming the %s", id, st.State, st.Reason, tc.want)
			}
		})
	}
}

// badKeys uses step keys the runtime reserves.
type badKey struct{ key string }

func (s badKey) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	_, err := d.Record(ctx, s.key, "x", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil })
	if err == nil {
		return json.Marshal("accepted")
	}
	if !errors.Is(err, swarm.ErrInvalid) {
		return nil, fmt.Errorf("not ErrInvalid: %w", err)
	}
	return nil, err
}

// Reserved, empty and malformed step keys are refused with a clear error.
func TestStrategyBadKeys(t *testing.T) {
	for _, key := range []string{"", "end", "start", "/a", "a/", "a//b", strings.Repeat("k", 500)} {
		def := swarm.Define[string, string]("bad", "bad keys", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(badKey{key})} })
		_, _, st := startSeam(t, def, scripted.New(scripted.Script{}), `"x"`, nil)
		if st.State != swarm.StateFailed || !strings.Contains(st.Reason, "step key") {
			t.Errorf("key %q: state %s (%s), want failed naming the step key", key, st.State, st.Reason)
		}
	}
}

// modelAndTools drives the orchestrator's own model and tools.
type modelAndTools struct{}

func (modelAndTools) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	msgs := []model.Message{{Role: model.RoleUser, Content: string(d.Input())}}
	for turn := 1; turn <= 3; turn++ {
		key := "turn/" + strconv.Itoa(turn)
		resp, err := d.Model(ctx, key, msgs)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			return json.Marshal(resp.Message.Content)
		}
		res, err := d.Tools(ctx, key, resp.Message.ToolCalls)
		if err != nil {
			return nil, err
		}
		for i, c := range resp.Message.ToolCalls {
			msgs = append(msgs, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Content: res[i].Output})
		}
	}
	return nil, &strategy.Failure{Reason: "three turns without an answer"}
}

// Model and Tools: the orchestrator's model calls its tool, whose result it
// sees on the next call, under crashes at every record.
func TestStrategyModelAndTools(t *testing.T) {
	var calls atomic.Int64
	add := swarm.NewTool("add", "adds", func(ctx context.Context, in struct{ A, B int }) (int, error) {
		calls.Add(1)
		return in.A + in.B, nil
	})
	def := swarm.Define[string, string]("calc", "calculates", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Calculate.", Tools: []swarm.Tool{add}, Strategy: strategy.Of(modelAndTools{}), NoBuiltins: true}
	})
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{def},
		Swarm:       "calc",
		Input:       json.RawMessage(`"2+3"`),
		Script: scripted.Script{"calc": {
			scripted.Tools(scripted.CallTool("add", map[string]any{"A": 2, "B": 3})),
			scripted.Text("5"),
		}},
		Stores: []string{strategytest.Memory, strategytest.SQLite},
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			st, _ := rt.Status(context.Background(), id)
			if string(st.Result) != `"5"` {
				t.Errorf("result %s, want \"5\"", st.Result)
			}
			var out string
			for ev, err := range rt.Events(context.Background(), id, 0) {
				if err == nil && ev.Type == swarm.EventToolResult {
					out = ev.Output
				}
			}
			if out != "5" {
				t.Errorf("tool result %q, want 5", out)
			}
		},
	})
}

// typedNode delegates JSON to a swarm with a typed input and result, then
// sleeps on a durable timer.
type typedNode struct{}

func (typedNode) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	out, err := d.Delegate(ctx, "book", "ticketing", `{"event":"jazz","seats":2}`)
	if err != nil {
		return nil, err
	}
	if err := d.Sleep(ctx, "cool-off", 10*time.Millisecond); err != nil {
		return nil, err
	}
	return json.Marshal("booked " + out)
}

// Delegate gives a swarm whose input is not text its JSON input, and
// returns its JSON result; Sleep's deadline is journaled.
func TestStrategyDelegatesJSONToASwarm(t *testing.T) {
	type ticket struct {
		Event string `json:"event"`
		Seats int    `json:"seats"`
	}
	type booking struct {
		Confirmation string `json:"confirmation"`
	}
	ticketing := swarm.Define[ticket, booking]("ticketing", "books tickets", func(ticket) swarm.Spec {
		return swarm.Spec{Instructions: "Book {{.Input.seats}} seats for {{.Input.event}}."}
	})
	def := swarm.Define[string, string]("outing", "books", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(ticketing)}, Strategy: strategy.Of(typedNode{})}
	})
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{ticketing, def},
		Swarm:       "outing",
		Input:       json.RawMessage(`"go"`),
		Script:      scripted.Script{"ticketing": {scripted.Text(`{"confirmation": "JZ-2"}`)}},
		Stores:      []string{strategytest.Memory, strategytest.SQLite},
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			st, _ := rt.Status(context.Background(), id)
			if want := `"booked {\"confirmation\":\"JZ-2\"}"`; string(st.Result) != want {
				t.Errorf("result %s, want %s", st.Result, want)
			}
		},
	})
}

// panicky panics in Drive, in a recorded function or in a branch.
type panicky struct{ where string }

func (s panicky) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	switch s.where {
	case "record":
		_, err := d.Record(ctx, "boom", "x", func(ctx context.Context) (json.RawMessage, error) {
			if swarm.IdempotencyKey(ctx) == "" {
				return nil, errors.New("no idempotency key")
			}
			panic("in record")
		})
		return nil, err
	case "branch":
		return nil, d.Parallel(ctx, 2, func(ctx context.Context, i int) error {
			if i == 1 {
				panic("in branch")
			}
			return nil
		})[1]
	}
	panic("in drive")
}

// A panic in a strategy fails its run with the panic's value instead of
// crashing the process; a recorded function's context has its step's
// idempotency key.
func TestStrategyPanicFailsTheRun(t *testing.T) {
	for _, where := range []string{"drive", "record", "branch"} {
		def := swarm.Define[string, string]("panicky", "panics", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(panicky{where})} })
		_, _, st := startSeam(t, def, scripted.New(scripted.Script{}), `"x"`, nil)
		if st.State != swarm.StateFailed || !strings.HasPrefix(st.Reason, "panic: in "+where) {
			t.Errorf("%s: state %s (%.60s), want failed with the panic", where, st.State, st.Reason)
		}
	}
}

// asksModel calls the orchestrator's model when told to.
type asksModel struct{ call bool }

func (s asksModel) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	if s.call {
		if _, err := d.Model(ctx, "ask", []model.Message{{Role: model.RoleUser, Content: "hi"}}); err != nil {
			return nil, err
		}
	}
	return json.Marshal("done")
}

// A strategy whose orchestrator has no model runs as long as it does not
// call it, and fails with a clear reason when it does.
func TestStrategyWithoutAModel(t *testing.T) {
	for _, call := range []bool{false, true} {
		def := swarm.Define[string, string]("nomodel", "needs no model", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(asksModel{call})} })
		_, _, st := startSeam(t, def, nil, `"x"`, nil)
		switch {
		case !call && st.State != swarm.StateCompleted:
			t.Errorf("no model call: state %s (%s), want completed", st.State, st.Reason)
		case call && (st.State != swarm.StateFailed || !strings.Contains(st.Reason, "no model configured")):
			t.Errorf("a model call: state %s (%s), want failed: no model configured", st.State, st.Reason)
		}
	}
}

// chartTool's result carries a PNG part for the model (AttachParts).
type chartParts struct{}

func (chartParts) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	msgs := []model.Message{{Role: model.RoleUser, Content: string(d.Input())}}
	resp, err := d.Model(ctx, "turn/1", msgs)
	if err != nil {
		return nil, err
	}
	res, err := d.Tools(ctx, "turn/1", resp.Message.ToolCalls)
	if err != nil {
		return nil, err
	}
	var types []string
	for _, r := range res {
		for _, p := range r.Parts {
			types = append(types, p.MediaType)
		}
	}
	return json.Marshal(strings.Join(types, ","))
}

// Tools gives a strategy the parts a tool attached for the model, as Round
// does, so that it can pass them on in the tool message.
func TestStrategyToolsGiveParts(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n chart")
	chart := swarm.NewTool("chart", "draws", func(ctx context.Context, _ struct{}) (string, error) {
		return "drawn", swarm.AttachParts(ctx, model.Part{Type: model.PartImage, MediaType: "image/png", Data: png})
	})
	def := swarm.Define[string, string]("draw", "draws", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Draw.", Tools: []swarm.Tool{chart}, Strategy: strategy.Of(chartParts{}), NoBuiltins: true}
	})
	m := scripted.New(scripted.Script{"draw": {scripted.Tools(scripted.CallTool("chart", map[string]any{}))}})
	_, _, st := startSeam(t, def, m, `"a chart"`, nil)
	if st.State != swarm.StateCompleted || string(st.Result) != `"image/png"` {
		t.Fatalf("%s %s %s, want the tool's part", st.State, st.Result, st.Reason)
	}
}

// twoSteps gives two primitives the same step key, the second after the
// first, and returns the second's error, which it also sends on second
// when that is set.
type twoSteps struct {
	first, second string
	errs          chan error
}

// primitives are the primitives that take a step under a key.
var primitives = []string{"Model", "ModelStep", "Ask", "Tools", "Round", "Delegate", "DelegateParts",
	"Await", "AwaitParts", "AwaitMail", "Record", "RecordEvent", "Sleep", "CheckInput"}

// step calls primitive what under key.
func step(ctx context.Context, d *strategy.Driver, what, key string) error {
	msgs := []model.Message{{Role: model.RoleUser, Content: "hi"}}
	var err error
	switch what {
	case "Model":
		_, err = d.Model(ctx, key, msgs)
	case "ModelStep":
		_, err = d.ModelStep(ctx, key, msgs, strategy.Step{})
	case "Ask":
		_, err = d.Ask(ctx, key, strategy.AskOptions{}, msgs)
	case "Tools":
		_, err = d.Tools(ctx, key, nil)
	case "Round":
		_, err = d.Round(ctx, key, nil)
	case "Delegate":
		_, err = d.Delegate(ctx, key, "helper", "help")
	case "DelegateParts":
		_, err = d.DelegateParts(ctx, key, "helper", "help", nil)
	case "Await":
		_, err = d.Await(ctx, key, strategy.Question{Reason: "yes?"})
	case "AwaitParts":
		_, _, err = d.AwaitParts(ctx, key, strategy.Question{Reason: "yes?"})
	case "AwaitMail":
		err = d.AwaitMail(ctx, key)
	case "Record":
		_, err = d.Record(ctx, key, "x", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil })
	case "RecordEvent":
		_, err = d.RecordEvent(ctx, key, func(context.Context) (swarm.Event, error) { return swarm.Event{Type: "note"}, nil })
	case "Sleep":
		err = d.Sleep(ctx, key, 0)
	case "CheckInput":
		_, err = d.CheckInput(ctx, key, "hi")
	case "stranger":
		_, err = d.Delegate(ctx, key, "editor", "help")
	default:
		panic("no primitive " + what)
	}
	return err
}

func (s twoSteps) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	if err := step(ctx, d, s.first, "k"); err != nil && !errors.Is(err, strategy.ErrAwaiting) {
		return nil, err
	}
	err := step(ctx, d, s.second, "k")
	if s.errs != nil {
		s.errs <- err
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal("both ran")
}

// modelCall reports whether primitive what is a call of a model, whose
// response's tools may run under its key.
func modelCall(what string) bool { return what == "Model" || what == "ModelStep" || what == "Ask" }

// A key given to two primitives in one drive breaks the rule that each
// key names one step, whatever the kinds of the two: the second is refused
// and the run fails naming the key and both primitives, rather than being
// answered with the first one's outcome, journaling beside it, or leaving
// the run for a later drive that meets the same clash. Only the tools of a
// model's response share its key. Every pair, in both orders.
func TestStrategyKeyNamesOneStep(t *testing.T) {
	helper := &swarm.Agent{Name: "helper", Instructions: "Help."}
	for _, first := range primitives {
		for _, second := range primitives {
			t.Run(first+"/"+second, func(t *testing.T) {
				errs := make(chan error, 1)
				def := swarm.Define[string, string]("twice", "one key, two steps", func(string) swarm.Spec {
					return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(helper)}, Strategy: strategy.Of(twoSteps{first, second, errs})}
				})
				m := scripted.New(scripted.Script{"twice": {scripted.Text("m1"), scripted.Text("m2")},
					"helper": {scripted.Text("one"), scripted.Text("two")}})
				_, _, st := startSeam(t, def, m, `"x"`, nil)
				err := swarmtest.Recv(t, swarmtest.Context(t), errs, "the second step's error")
				if modelCall(first) && (second == "Tools" || second == "Round") {
					if st.State != swarm.StateCompleted {
						t.Errorf("state %s (%s), want completed: the tools of a model's response share its key", st.State, st.Reason)
					}
					return
				}
				// Await and AwaitParts are one primitive to the engine.
				name := strings.NewReplacer("AwaitParts", "Await").Replace
				want := fmt.Sprintf(`step key "k" names two steps of the run (%s, then %s)`, name(first), name(second))
				if !errors.Is(err, swarm.ErrInvalid) || !strings.Contains(fmt.Sprint(err), want) {
					t.Fatalf("the second step: %v, want ErrInvalid: %s", err, want)
				}
				// AwaitMail releases the run at once: it waits for mail,
				// and its drive can record nothing more.
				if first != "AwaitMail" && (st.State != swarm.StateFailed || !strings.Contains(st.Reason, want)) {
					t.Errorf("state %s (%s), want failed: %s", st.State, st.Reason, want)
				}
			})
		}
	}
}

// everyOnce takes a step of every primitive, each under a key of its own
// (a model call's tools under its key), then waits for two answers.
type everyOnce struct{}

func (everyOnce) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	keys := [][2]string{{"Model", "m"}, {"Tools", "m"}, {"ModelStep", "ms"}, {"Round", "ms"}, {"Ask", "ask"},
		{"Delegate", "d1"}, {"DelegateParts", "d2"}, {"Record", "r"}, {"RecordEvent", "e"}, {"Sleep", "s"},
		{"CheckInput", "g"}, {"Await", "a1"}, {"AwaitParts", "a2"}}
	for _, k := range keys {
		if err := step(ctx, d, k[0], k[1]); err != nil {
			return nil, err
		}
	}
	return json.Marshal("all ran")
}

// A replay claims the keys of the steps it replays again: no key is taken
// twice by a drive that continues a run, after a crash at any record or a
// pause.
func TestStrategyReplayClaimsKeysAgain(t *testing.T) {
	helper := &swarm.Agent{Name: "helper", Instructions: "Help."}
	def := swarm.Define[string, string]("every", "every primitive once", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(helper)}, Strategy: strategy.Of(everyOnce{})}
	})
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{def},
		Swarm:       "every",
		Input:       json.RawMessage(`"x"`),
		Script: scripted.Script{"every": {scripted.Text("m"), scripted.Text("ms"), scripted.Text("ask")},
			"helper": {scripted.Text("one"), scripted.Text("two")}},
		Answers: []string{"yes", "sure"},
		Stores:  []string{strategytest.Memory, strategytest.SQLite},
	})
}

// A strategy given to a swarm without strategy.Of does not compile, and
// the compiler's message points at strategy.Of rather than at a method to
// add to the strategy.
func TestStrategyWithoutOf(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the compiler")
	}
	out, err := exec.Command("go", "build", "-o", os.DevNull, "./testdata/without_of").CombinedOutput()
	if err == nil {
		t.Fatal("a strategy given without strategy.Of compiled")
	}
	if !strings.Contains(string(out), "missing method WrapWithStrategyOf") {
		t.Errorf("the compiler said:\n%s\nwant it to point at strategy.Of", out)
	}
}

// pastAPause awaits a human in branch 0 of Parallel while branch 1, once
// branch 0 has returned, records a side effect: runs counts the effect.
type pastAPause struct{ runs *atomic.Int64 }

func (s pastAPause) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	asked := make(chan struct{})
	var answer, effect string
	errs := d.Parallel(ctx, 2, func(ctx context.Context, i int) error {
		if i == 0 {
			defer close(asked)
			var err error
			answer, err = d.Await(ctx, "ask", strategy.Question{Reason: "Go on?"})
			return err
		}
		<-asked
		v, err := d.Record(ctx, "effect", "effect", func(context.Context) (json.RawMessage, error) {
			s.runs.Add(1)
			return json.Marshal("done")
		})
		effect = string(v)
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return json.Marshal(answer + " " + effect)
}

// A branch of Parallel goes on past another branch's pause: what it does
// after the question is asked is journaled in the same drive (the run
// keeps its lease until Drive returns), so it is not done again once the
// answer comes.
func TestStrategyParallelGoesOnPastAPause(t *testing.T) {
	var runs atomic.Int64
	def := swarm.Define[string, string]("past", "a pause and a branch", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(pastAPause{&runs})}
	})
	rt, id, st := startSeam(t, def, scripted.New(scripted.Script{}), `"x"`, nil)
	if st.State != swarm.StatePaused || st.Reason != "Go on?" {
		t.Fatalf("state %s (%s), want paused at the question", st.State, st.Reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rt.Resume(ctx, id, "yes"); err != nil {
		t.Fatal(err)
	}
	if st, _ = rt.Wait(ctx, id); st.State != swarm.StateCompleted || string(st.Result) != `"yes \"done\""` {
		t.Fatalf("state %s (%s, %s), want completed", st.State, st.Reason, st.Result)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the branch's recorded effect ran %d times, want once", n)
	}
}

// atTurns takes a recorded step in turn 5 and a delegation in turn 6.
type atTurns struct{}

func (atTurns) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	if _, err := d.AtTurn(5).Record(ctx, "note", "note", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil }); err != nil {
		return nil, err
	}
	if _, err := d.AtTurn(6).Delegate(ctx, "ask", "helper", "help"); err != nil {
		return nil, err
	}
	return json.Marshal("done")
}

// AtTurn's turn is on the events of every primitive: a recorded value and
// a delegation's handoff events carry it, as a model call's do.
func TestStrategyAtTurnMarksEveryStep(t *testing.T) {
	helper := &swarm.Agent{Name: "helper", Instructions: "Help."}
	def := swarm.Define[string, string]("turns", "steps in turns", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(helper)}, Strategy: strategy.Of(atTurns{})}
	})
	rt, id, st := startSeam(t, def, scripted.New(scripted.Script{"helper": {scripted.Text("helped")}}), `"x"`, nil)
	if st.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s), want completed", st.State, st.Reason)
	}
	want := map[string]int{"note": 5, "ask/call/next": 6, "ask/tool/next": 6}
	ctx := context.Background()
	for ev, err := range rt.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if turn, ok := want[ev.Key]; ok {
			if ev.Turn != turn {
				t.Errorf("%s %s in turn %d, want %d", ev.Type, ev.Key, ev.Turn, turn)
			}
			delete(want, ev.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("no events under %v", want)
	}
}

// Delegating to a name that is not one of the run's targets says which
// names are.
func TestStrategyDelegateUnknownTargetNamesTargets(t *testing.T) {
	helper := &swarm.Agent{Name: "helper", Instructions: "Help."}
	def := swarm.Define[string, string]("lost", "delegates to a stranger", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(helper)}, Strategy: strategy.Of(twoSteps{first: "stranger", second: "stranger"})}
	})
	_, _, st := startSeam(t, def, scripted.New(scripted.Script{}), `"x"`, nil)
	if st.State != swarm.StateFailed || !strings.Contains(st.Reason, `cannot hand off to "editor"; its targets are: helper`) {
		t.Errorf("state %s (%s), want failed naming the targets", st.State, st.Reason)
	}
}

// swallows awaits a human and drops the error that says the answer is
// not there yet: in a branch of Parallel when branch is set, and under a
// context it cancels before returning when withdraw is set.
type swallows struct{ branch, withdraw bool }

func (s swallows) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	var answer string
	ask := func(ctx context.Context) {
		answer, _ = d.Await(ctx, "ask", strategy.Question{Reason: "Which one?"})
	}
	switch {
	case s.withdraw:
		actx, cancel := context.WithCancel(ctx)
		ask(actx)
		cancel()
	case s.branch:
		d.Parallel(ctx, 2, func(ctx context.Context, i int) error {
			if i == 0 {
				ask(ctx)
			}
			return nil
		})
	default:
		ask(ctx)
	}
	return json.Marshal("answer: " + answer)
}

// A Drive that drops ErrAwaiting and returns a result would complete the
// run without the answer it waits for, and without a pause: the run fails
// instead, saying so. A question whose step's context the strategy
// cancelled (a race's loser) is withdrawn, and the run completes.
func TestStrategySwallowedAwaitFails(t *testing.T) {
	for _, s := range []swallows{{}, {branch: true}} {
		def := swarm.Define[string, string]("swallow", "drops ErrAwaiting", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(s)} })
		_, _, st := startSeam(t, def, scripted.New(scripted.Script{}), `"x"`, nil)
		if st.State != swarm.StateFailed || !strings.Contains(st.Reason, `returned a result while the run awaited an answer (Which one?)`) ||
			!strings.Contains(st.Reason, "strategy.ErrAwaiting") {
			t.Errorf("%+v: state %s (%s) result %s, want failed: a result while awaiting", s, st.State, st.Reason, st.Result)
		}
	}
	def := swarm.Define[string, string]("withdraw", "withdraws a question", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(swallows{withdraw: true})}
	})
	rt, id, st := startSeam(t, def, scripted.New(scripted.Script{}), `"x"`, nil)
	if st.State != swarm.StateCompleted || string(st.Result) != `"answer: "` {
		t.Errorf("state %s (%s) result %s, want completed without the withdrawn question", st.State, st.Reason, st.Result)
	}
	for ev, err := range rt.Events(context.Background(), id, 0) {
		if err == nil && ev.Type == swarm.EventPaused {
			t.Errorf("a withdrawn question was journaled: %+v", ev)
		}
	}
}
