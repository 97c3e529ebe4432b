package swarm_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/swarmtest"
)

// cycleModel makes every agent hand off to the agent next names, again and
// again, until a handoff comes back refused for its depth; then it answers.
// After 200 calls it answers "runaway" instead, so that a missing depth
// limit fails a test quickly rather than exhausting the machine.
type cycleModel struct {
	next   map[string]string
	longID bool // call ids of 60 random hex digits, as some providers make

	calls   atomic.Int64
	mu      sync.Mutex
	refused []string // the error results naming the depth limit, as the model saw them
}

func (m *cycleModel) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	if m.calls.Add(1) > 200 {
		return &model.Response{Message: model.Message{Content: "runaway"}}, nil
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == model.RoleTool {
		if last.IsError && strings.Contains(last.Content, "nesting depth limit") {
			m.mu.Lock()
			m.refused = append(m.refused, last.Content)
			m.mu.Unlock()
		}
		return &model.Response{Message: model.Message{Content: "done"}}, nil
	}
	id := ""
	if m.longID {
		var b [30]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{
		ID: id, Name: "handoff_to_" + m.next[req.Agent], Arguments: json.RawMessage(`{"request":"once more"}`),
	}}}}, nil
}

// cycle defines swarm "cycle", whose orchestrator hands off to writer;
// writer hands off to itself (self) or to critic, which hands back.
func cycle(self bool) (*swarm.Swarm[string, string], map[string]string) {
	writer := &swarm.Agent{Name: "writer", Instructions: "write"}
	next := map[string]string{"cycle": "writer"}
	if self {
		writer.Handoffs = []swarm.Handoff{swarm.ToAgent(writer)}
		next["writer"] = "writer"
	} else {
		critic := &swarm.Agent{Name: "critic", Instructions: "criticise", Handoffs: []swarm.Handoff{swarm.ToAgent(writer)}}
		writer.Handoffs = []swarm.Handoff{swarm.ToAgent(critic)}
		next["writer"], next["critic"] = "critic", "writer"
	}
	def := swarm.Define[string, string]("cycle", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(writer)}}
	})
	return def, next
}

// Agent handoffs that cycle (an agent handing off to itself, two agents
// handing off to each other) end at Config.MaxDepth with an error result
// that the model sees, as child swarms do.
func TestHandoffCyclesEndAtTheDepthLimit(t *testing.T) {
	for _, self := range []bool{true, false} {
		t.Run(fmt.Sprint("self=", self), func(t *testing.T) {
			def, next := cycle(self)
			m := &cycleModel{next: next}
			rt, err := swarm.New(swarm.Config{Model: m, MaxDepth: 4, PollInterval: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			ctx := ctxT(t)
			res, run, err := def.Run(ctx, rt, "go")
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
				t.Fatalf("result %#v", res)
			}
			// The orchestrator and agents at depths 1..4 call the model
			// twice each (hand off, then answer); the agent at depth 4 is
			// refused.
			if n := m.calls.Load(); n != 10 {
				t.Errorf("%d model calls, want 10", n)
			}
			if len(m.refused) != 1 || !strings.Contains(m.refused[0], "nesting depth limit (4)") {
				t.Errorf("refusals seen by the model: %q", m.refused)
			}
			evs, err := rt.History(ctx, run.ID(), 0)
			if err != nil {
				t.Fatal(err)
			}
			refused := 0
			for _, e := range evs {
				if e.Type == swarm.EventHandoffReturned && e.IsError {
					refused++
					if !strings.Contains(e.Output, "Config.MaxDepth") {
						t.Errorf("refusal %q does not name the limit", e.Output)
					}
				}
			}
			if refused != 1 {
				t.Errorf("%d refused handoffs in the journal, want 1", refused)
			}
		})
	}
}

// Agent handoffs and child swarms count together against MaxDepth: an
// agent at depth 1 starts a child at depth 2.
func TestDepthCountsAgentsAndChildSwarmsTogether(t *testing.T) {
	leaf := swarm.Define[string, string]("leaf", "", nil)
	mid := &swarm.Agent{Name: "mid", Instructions: "delegate", Handoffs: []swarm.Handoff{swarm.ToSwarm(leaf)}}
	top := swarm.Define[string, string]("top", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(mid)}}
	})
	script := scripted.Script{
		"top":  {scripted.Tools(scripted.CallTool("handoff_to_mid", map[string]any{"request": "x"})), scripted.Text("done")},
		"mid":  {scripted.Tools(scripted.CallTool("handoff_to_leaf", map[string]any{"request": "x"})), scripted.Text("mid done")},
		"leaf": {scripted.Text("leaf done")},
	}
	for _, limit := range []int{1, 2} {
		rt, err := swarm.New(swarm.Config{Model: scripted.New(script), MaxDepth: limit, PollInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		ctx := ctxT(t)
		_, run, err := top.Run(ctx, rt, "go")
		if err != nil {
			t.Fatal(err)
		}
		kids := children(t, rt, run.ID())
		switch {
		case limit == 1 && len(kids) != 0:
			t.Errorf("MaxDepth 1: a child swarm was started below an agent at depth 1")
		case limit == 2 && len(kids) != 1:
			t.Errorf("MaxDepth 2: %d child runs, want 1", len(kids))
		case limit == 2:
			if st, _ := rt.Status(ctx, kids[0].ID); st.Depth != 2 {
				t.Errorf("child depth %d, want 2", st.Depth)
			}
		}
	}
}

// A deep chain of agent handoffs with long call ids completes on
// PostgreSQL: its step keys stay within the journal's unique index however
// deep the nesting.
func TestDeepHandoffsOnPostgres(t *testing.T) {
	url := pgtest.URL(t) // a schema of its own; skips without SWARM_TEST_POSTGRES
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	def, next := cycle(true)
	m := &cycleModel{next: next, longID: true}
	rt, err := swarm.New(swarm.Config{Store: st, Model: m, MaxDepth: 60, Lease: 3 * time.Second, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, run, err := def.Run(ctx, rt, "go")
	if err != nil {
		t.Fatalf("run did not end: %v", err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
		t.Fatalf("result %#v", res)
	}
	if len(m.refused) != 1 {
		t.Errorf("%d depth refusals seen, want 1", len(m.refused))
	}
	evs, err := rt.History(ctx, run.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	longest := 0
	for _, e := range evs {
		longest = max(longest, len(e.Key))
	}
	if longest > 600 {
		t.Errorf("longest step key has %d bytes", longest)
	}
}

// faulty is a store whose appends of a record with a given key fail with
// err, as a database refusing that record (or unreachable when it comes)
// would.
type faulty struct {
	store.Store
	key     string
	err     error
	refused atomic.Int64
}

func (f *faulty) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	for _, r := range recs {
		if r.Key == f.key {
			f.refused.Add(1)
			return 0, f.err
		}
	}
	return f.Store.Append(ctx, l, recs, u)
}

// A store error that retrying will not fix fails the run with a reason at
// once; a store error that might go away is retried by driving the run
// again, but a run driven again and again without progress fails too.
func TestStoreErrorsEndTheRunInsteadOfRedrivingForever(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		err          error
		calls        int64 // model calls
	}{
		{"permanent", "retrying cannot fix this", errors.New("value too long for the key column"), 1},
		{"unavailable", "driven 5 times in a row without recording progress", fmt.Errorf("connection reset (%w)", store.ErrUnavailable), 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The final answer would be journaled with the run's end: the
			// first response is a tool call, so that t1/model is appended
			// on its own, and refused.
			var calls atomic.Int64
			m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				calls.Add(1)
				if len(req.Messages) == 1 {
					return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{Name: "nothing", Arguments: json.RawMessage(`{}`)}}}}, nil
				}
				return &model.Response{Message: model.Message{Content: "hello"}}, nil
			})
			st := &faulty{Store: memory.New(), key: "t1/model", err: tc.err}
			rt, err := swarm.New(swarm.Config{Store: st, Model: m, Lease: 150 * time.Millisecond, PollInterval: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			def := swarm.Define[string, string]("stuck", "", nil)
			ctx := ctxT(t)
			res, run, err := def.Run(ctx, rt, "go")
			if err != nil {
				t.Fatalf("the run did not end (refused appends: %d, model calls: %d): %v", st.refused.Load(), calls.Load(), err)
			}
			f, ok := res.(swarm.Failed)
			if !ok || !strings.Contains(f.Reason, tc.reason) {
				t.Fatalf("result %#v, want a failure saying %q", res, tc.reason)
			}
			if n := calls.Load(); n != tc.calls {
				t.Errorf("%d model calls, want %d", n, tc.calls)
			}
			if s, _ := rt.Status(ctx, run.ID()); s.State != swarm.StateFailed {
				t.Errorf("state %s", s.State)
			}
		})
	}
}

// Two different agents with one name anywhere in a swarm's plan are an
// error at start (or at registration) naming both places; the same agent
// reachable twice is fine.
func TestDuplicateAgentNamesAreRejected(t *testing.T) {
	helperA := &swarm.Agent{Name: "helper", Instructions: "A"}
	helperB := &swarm.Agent{Name: "helper", Instructions: "B"}
	other := &swarm.Agent{Name: "other", Handoffs: []swarm.Handoff{swarm.ToAgent(helperB)}}
	rt, _ := newRuntime(t, scripted.Script{"s": {scripted.Text("ok")}}, nil)
	ctx := ctxT(t)
	start := func(id string, hs ...swarm.Handoff) error {
		def := swarm.Define[string, string](id, "", func(string) swarm.Spec { return swarm.Spec{Handoffs: hs} })
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		_, err := rt.Start(ctx, id, json.RawMessage(`"go"`))
		return err
	}
	err := start("nested", swarm.ToAgent(helperA), swarm.ToAgent(other))
	if !errors.Is(err, swarm.ErrDuplicate) || !strings.Contains(err.Error(), "the handoffs of nested") || !strings.Contains(err.Error(), "the handoffs of other") {
		t.Errorf("nested duplicate: %v", err)
	}
	if err := rt.RegisterAgent(helperA); err != nil {
		t.Fatal(err)
	}
	byID := &swarm.Agent{Name: "byid", Handoffs: []swarm.Handoff{swarm.ToAgentID("helper")}}
	err = start("registered", swarm.ToAgent(helperB), swarm.ToAgent(byID))
	if !errors.Is(err, swarm.ErrDuplicate) || !strings.Contains(err.Error(), "the handoffs of registered") || !strings.Contains(err.Error(), "the handoffs of byid (the registered agent)") {
		t.Errorf("registered duplicate: %v", err)
	}
	err = rt.RegisterAgent(&swarm.Agent{Name: "lead", Handoffs: []swarm.Handoff{swarm.ToAgent(other), swarm.ToAgentID("helper")}})
	if !errors.Is(err, swarm.ErrDuplicate) || !strings.Contains(err.Error(), `"helper"`) {
		t.Errorf("registration: %v", err)
	}
	twice := &swarm.Agent{Name: "twice", Handoffs: []swarm.Handoff{swarm.ToAgentID("helper")}}
	if err := start("same", swarm.ToAgent(helperA), swarm.ToAgent(twice)); err != nil {
		t.Errorf("one agent reachable twice: %v", err)
	}
}

// A customization with a key the offered schema does not have is refused to
// the model naming the key, and a refused child handoff names no child run.
func TestCustomizationUnknownKeyIsRefused(t *testing.T) {
	rt, _ := newRecorded(t, scripted.Script{
		"activities": {
			scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{
				"input":         map[string]any{"event": "x", "seats": 1},
				"customization": map[string]any{"instructions": "Prefer aisle seats."},
			})),
			scripted.Text("done"),
		},
		"ticketing": {scripted.Text(`{"confirmation":"A1"}`)},
	}, swarm.Config{})
	ctx := ctxT(t)
	_, run, err := activities(swarm.ToSwarm(ticketing()).Customizable()).Run(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	if kids := children(t, rt, run.ID()); len(kids) != 0 {
		t.Errorf("%d child runs started", len(kids))
	}
	evs, _ := rt.History(ctx, run.ID(), 0)
	returned := false
	for _, e := range evs {
		if e.Child != "" {
			t.Errorf("%s event names child run %s, which was never created", e.Type, e.Child)
		}
		if e.Type == swarm.EventHandoffReturned {
			returned = true
			if !e.IsError || !strings.Contains(e.Output, `unknown key "instructions"`) {
				t.Errorf("handoff result %q", e.Output)
			}
		}
	}
	if !returned {
		t.Error("no handoff_returned event")
	}
}

// Seed 000's two layers: the captain's OnToolUse fires for a delegation
// (an agent or a swarm handoff) as for any tool call, and the sibling's own
// hooks fire for its own tools.
func TestOnToolUseFiresForDelegations(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	onTool := func(layer string) swarm.Hooks {
		return swarm.Hooks{OnToolUse: func(_ context.Context, e swarm.Event) {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s:%s:%s=%s", layer, e.Type, e.Tool, e.Output))
			mu.Unlock()
		}}
	}
	sibling := &swarm.Agent{Name: "factorer", Tools: []swarm.Tool{factor}, Hooks: onTool("factorer")}
	fib := swarm.Define[string, string]("fib", "", nil)
	captain := swarm.Define[string, string]("captain", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(sibling), swarm.ToSwarm(fib)}, Hooks: onTool("captain")}
	})
	rt, _ := newRuntime(t, scripted.Script{
		"captain": {
			scripted.Tools(scripted.CallTool("handoff_to_factorer", map[string]any{"request": "factor 30"})),
			scripted.Tools(scripted.CallTool("handoff_to_fib", map[string]any{"request": "fib 5"})),
			scripted.Text("2 × 3 × 5"),
		},
		"factorer": {scripted.Tools(scripted.CallTool("factor", map[string]any{"n": 30})), scripted.Text("2, 3, 5")},
		"fib":      {scripted.Text("5")},
	}, nil)
	if _, _, err := captain.Run(ctxT(t), rt, "factor 30"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"factorer:tool_result:factor=2, 3, 5",
		"captain:handoff_returned:handoff_to_factorer=2, 3, 5",
		"captain:handoff_returned:handoff_to_fib=5",
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("OnToolUse fired:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// addIn is the input of the add tool of the invalid-arguments tests.
type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

var add = swarm.NewTool("add", "adds", func(_ context.Context, in addIn) (int, error) { return in.A + in.B, nil })

// calc is a swarm with the add tool.
func calc() *swarm.Swarm[string, string] {
	return swarm.Define[string, string]("calc", "", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{add}} })
}

// invalidArgsScript calls add with arguments that are not JSON, then with
// good ones, then answers.
var invalidArgsScript = scripted.Script{"calc": {
	scripted.Tools(scripted.CallTool("add", `{"a": 2, "b":`)),
	scripted.Tools(scripted.CallTool("add", map[string]any{"a": 2, "b": 3})),
	scripted.Text("5"),
}}

// A model's tool call whose arguments are not JSON (real models send such)
// becomes an error result the model sees, through a real provider and a
// real store, and the run goes on to complete.
func TestInvalidToolArgumentsThroughTheRealPath(t *testing.T) {
	srv := swarmtest.NewOpenAIServer(t, invalidArgsScript)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := swarm.New(swarm.Config{Store: st, Model: srv.OpenAI(t), RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := ctxT(t)
	res, run, err := calc().Run(ctx, rt, "2+3")
	if err != nil {
		t.Fatalf("the run did not end: %v", err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "5" {
		t.Fatalf("result %#v", res)
	}
	calls := srv.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d model calls, want 3", len(calls))
	}
	msgs := calls[1].Messages
	if len(msgs) < 3 || msgs[1].Role != model.RoleAssistant || len(msgs[1].ToolCalls) != 1 || string(msgs[1].ToolCalls[0].Arguments) != `{"a": 2, "b":` {
		t.Fatalf("second request: the model's own call is not given back as it made it: %+v", msgs)
	}
	if !strings.Contains(msgs[2].Content, "invalid arguments for tool add: not valid JSON") {
		t.Errorf("the model was told %q", msgs[2].Content)
	}
	var journaled bool
	for _, e := range swarmtest.Events(t, rt, run.ID()) {
		if e.Type == swarm.EventModelResponse && len(e.ToolCalls) == 1 && string(e.ToolCalls[0].Arguments) == `{"a": 2, "b":` {
			journaled = true
		}
	}
	if !journaled {
		t.Error("the invalid arguments are not in the journal as the model sent them")
	}
}

// A journal holding a response with invalid arguments recovers: a run
// killed right after journaling it is continued by another runtime, which
// sends the model the same messages as a run that was never killed.
func TestInvalidToolArgumentsRecover(t *testing.T) {
	ctx := ctxT(t)
	requests := func(rec *recorder) [][]model.Message {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var out [][]model.Message
		for _, r := range rec.reqs {
			out = append(out, r.Messages)
		}
		return out
	}
	clean, cleanRec := newRecorded(t, invalidArgsScript, swarm.Config{})
	if _, _, err := calc().Run(ctx, clean, "2+3"); err != nil {
		t.Fatal(err)
	}
	want := requests(cleanRec)

	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := dying(t, st, 1) // dies once the first response is journaled
	recA := &recorder{m: scripted.New(invalidArgsScript)}
	a, err := swarm.New(swarm.Config{Store: d, Model: recA, Lease: 100 * time.Millisecond, Owner: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Register(calc()); err != nil {
		t.Fatal(err)
	}
	id, err := a.Start(ctx, "calc", json.RawMessage(`"2+3"`))
	if err != nil {
		t.Fatal(err)
	}
	recB := &recorder{m: scripted.New(invalidArgsScript)}
	b, err := swarm.New(swarm.Config{Store: st, Model: recB, Owner: "B", PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	recoverElsewhere(t, ctx, d, a, b, calc(), id)
	got := append(requests(recA)[:1], requests(recB)...)
	if len(got) != len(want) {
		t.Fatalf("%d requests across the crash, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("request %d after recovery:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// A run killed deep inside a chain of agent handoffs (past the point where
// step key prefixes are digested) recovers without calling the model again
// for any recorded step: the keys a replay computes are the recorded ones.
func TestDeepHandoffsRecover(t *testing.T) {
	ctx := ctxT(t)
	def, next := cycle(true)
	cfg := func(st store.Store, m model.Model, owner string, lease time.Duration) swarm.Config {
		return swarm.Config{Store: st, Model: m, MaxDepth: 30, Owner: owner, Lease: lease, PollInterval: 10 * time.Millisecond}
	}
	clean := &cycleModel{next: next, longID: true}
	rt0, err := swarm.New(cfg(memory.New(), clean, "clean", time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer rt0.Close()
	if _, _, err := def.Run(ctx, rt0, "go"); err != nil {
		t.Fatal(err)
	}
	total := clean.calls.Load() // 62: 31 levels, two calls each

	mem := memory.New()
	d := dying(t, mem, 40) // deep down, on the way back up
	a := &cycleModel{next: next, longID: true}
	rtA, err := swarm.New(cfg(d, a, "A", 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer rtA.Close()
	if err := rtA.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := rtA.Start(ctx, "cycle", json.RawMessage(`"go"`))
	if err != nil {
		t.Fatal(err)
	}
	b := &cycleModel{next: next, longID: true}
	rtB, err := swarm.New(cfg(mem, b, "B", time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer rtB.Close()
	recoverElsewhere(t, ctx, d, rtA, rtB, def, id)
	// Every call journaled by A is read back; only a call in flight when A
	// died may be made again.
	if got := a.calls.Load() + b.calls.Load(); got < total || got > total+1 {
		t.Errorf("%d model calls across the crash, want %d (or one more)", got, total)
	}
	recs, err := mem.Read(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	digested := false
	for _, r := range recs {
		digested = digested || strings.HasPrefix(r.Key, "~")
	}
	if !digested {
		t.Error("the run never nested deep enough to digest a key prefix")
	}
}

// recoverElsewhere waits until run id's store d has died under runtime a,
// closes a, lets a's lease (at most 100ms) run out, and has b recover the
// run, which must then complete.
func recoverElsewhere(t *testing.T, ctx context.Context, d *swarmtest.Killable, a, b *swarm.Runtime, def swarm.Definition, id string) {
	t.Helper()
	for !d.Dead() {
		select {
		case <-ctx.Done():
			t.Fatalf("the run never died (%d appends)", d.Appends())
		case <-time.After(time.Millisecond):
		}
	}
	a.Close()
	if err := b.Register(def); err != nil {
		t.Fatal(err)
	}
	// The run is B's once A's lease has expired: on a loaded machine that
	// may be later than the lease's length after A died.
	for {
		ids, err := b.Recover(ctx)
		if err != nil || len(ids) > 1 {
			t.Fatalf("recover: %v %v", ids, err)
		}
		if len(ids) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the run of the dead process was never recovered")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if s, err := b.Wait(ctx, id); err != nil || s.State != swarm.StateCompleted {
		t.Fatalf("recovered run: %+v %v", s, err)
	}
}
