package swarm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/sqlite"
)

// countedModel counts the requests that reach a model.
type countedModel struct {
	model.Model
	calls atomic.Int64
}

func (m *countedModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.calls.Add(1)
	return m.Model.Generate(ctx, req)
}

// runawayScript scripts every agent of a handoff cycle (next names the
// agent each hands off to) to hand off again, steps times: a model that
// never stops delegating.
func runawayScript(next map[string]string, steps int) scripted.Script {
	s := scripted.Script{}
	for agent, to := range next {
		for range steps {
			s[agent] = append(s[agent], scripted.Tools(scripted.CallTool("handoff_to_"+to, map[string]any{"request": "once more"})))
		}
	}
	return s
}

// A handoff cycle (an agent that hands off to itself, or two agents that
// hand off to each other) with default settings made up to
// MaxTurns^MaxDepth model calls. The runtime's default limit on a run
// tree's model calls ends it: the run fails with a reason naming the limit
// after exactly that many calls.
func TestRunawayHandoffCycleEndsAtTheDefaultModelCallLimit(t *testing.T) {
	for name, open := range freshStores(t) {
		for _, self := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/self=%v", name, self), func(t *testing.T) {
				def, next := cycle(self)
				m := &countedModel{Model: scripted.New(runawayScript(next, swarm.DefaultMaxModelCalls+200), scripted.WithoutBookkeeping())}
				rt, err := swarm.New(swarm.Config{Store: open(t), Model: m})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				res, _, err := def.Run(ctxT(t), rt, "go")
				if err != nil {
					t.Fatal(err)
				}
				want := fmt.Sprintf("model calls %d of %d", swarm.DefaultMaxModelCalls, swarm.DefaultMaxModelCalls)
				if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, want) || !strings.Contains(f.Reason, "Config.MaxModelCalls") {
					t.Fatalf("result %#v, want a failure naming %q and Config.MaxModelCalls", res, want)
				}
				if n := m.calls.Load(); n != swarm.DefaultMaxModelCalls {
					t.Errorf("%d model calls, want the limit, %d", n, swarm.DefaultMaxModelCalls)
				}
			})
		}
	}
}

// The limit is raised per run with WithBudget and for the runtime with
// Config.MaxModelCalls; a negative value lifts it.
func TestRunawayModelCallLimitCanBeRaisedOrLifted(t *testing.T) {
	cases := []struct {
		name   string
		cfg    int64
		budget *swarm.Budget
		want   int64 // the calls made; 0: the run completes
	}{
		{"config", 1500, nil, 1500},
		{"budget", 0, &swarm.Budget{ModelCalls: 1200}, 1200},
		{"budget-over-config", 50, &swarm.Budget{ModelCalls: 70, Tokens: 1 << 40}, 70},
		{"lifted", 0, &swarm.Budget{ModelCalls: -1}, 0},
		{"lifted-by-config", -1, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// An agent that hands off to itself 1,300 times, then answers:
			// 2,603 calls in all when nothing stops it.
			writer := &swarm.Agent{Name: "writer", Instructions: "write"}
			writer.Handoffs = []swarm.Handoff{swarm.ToAgent(writer)}
			def := swarm.Define[string, string]("deep", "", func(string) swarm.Spec {
				return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(writer)}, MaxTurns: 2}
			})
			const depth = 1300
			script := runawayScript(map[string]string{"deep": "writer", "writer": "writer"}, 1)
			script["writer"] = runawayScript(map[string]string{"writer": "writer"}, depth)["writer"]
			for range depth + 1 {
				script["writer"] = append(script["writer"], scripted.Text("done"))
			}
			script["deep"] = append(script["deep"], scripted.Text("done"))
			m := &countedModel{Model: scripted.New(script, scripted.WithoutBookkeeping())}
			rt, err := swarm.New(swarm.Config{Model: m, MaxModelCalls: tc.cfg, MaxDepth: depth + 1})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			var opts []swarm.StartOption
			if tc.budget != nil {
				opts = append(opts, swarm.WithBudget(*tc.budget))
			}
			// Thousands of journaled tool calls take a while under the race
			// detector on a busy machine: a longer bound than ctxT's.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, _, err := def.Run(ctx, rt, "go", opts...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == 0 {
				if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
					t.Fatalf("result %#v, want completed", res)
				}
				if n := m.calls.Load(); n != 2*depth+3 {
					t.Errorf("%d model calls, want %d", n, 2*depth+3)
				}
				return
			}
			want := fmt.Sprintf("model calls %d of %d", tc.want, tc.want)
			if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, want) {
				t.Fatalf("result %#v, want a failure naming %q", res, want)
			}
			if n := m.calls.Load(); n != tc.want {
				t.Errorf("%d model calls, want %d", n, tc.want)
			}
		})
	}
}

// Tool executions have a tree-wide limit too, on by default, raised by
// Config.MaxToolCalls or WithBudget and lifted by a negative value.
func TestRunawayToolCallLimit(t *testing.T) {
	// Past the default limit of 5000: 6000 tool calls in 120 rounds.
	const rounds, perRound = 120, 50
	cases := []struct {
		name   string
		cfg    int64
		budget *swarm.Budget
		want   int64 // the tool calls made; 0: the run completes
	}{
		{"default", 0, nil, swarm.DefaultMaxToolCalls},
		{"config", 300, nil, 300},
		{"budget", 300, &swarm.Budget{ToolCalls: 5500}, 5500},
		{"lifted", 0, &swarm.Budget{ToolCalls: -1}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ran atomic.Int64
			echo := swarm.NewTool("echo", "echoes", func(_ context.Context, in echoIn) (int, error) {
				ran.Add(1)
				return in.N, nil
			})
			var steps []scripted.Step
			for i := range rounds {
				var calls []scripted.ToolCall
				for j := range perRound {
					calls = append(calls, scripted.CallTool("echo", map[string]any{"n": i*perRound + j}))
				}
				steps = append(steps, scripted.Tools(calls...))
			}
			steps = append(steps, scripted.Text("done"))
			def := swarm.Define[string, string]("busy", "", func(string) swarm.Spec {
				return swarm.Spec{Tools: []swarm.Tool{echo}, MaxTurns: rounds + 1}
			})
			rt, err := swarm.New(swarm.Config{Model: scripted.New(scripted.Script{"busy": steps}, scripted.WithoutBookkeeping()), MaxToolCalls: tc.cfg})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			var opts []swarm.StartOption
			if tc.budget != nil {
				opts = append(opts, swarm.WithBudget(*tc.budget))
			}
			res, _, err := def.Run(ctxT(t), rt, "go", opts...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == 0 {
				if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
					t.Fatalf("result %#v, want completed", res)
				}
				if n := ran.Load(); n != rounds*perRound {
					t.Errorf("%d tool calls, want %d", n, rounds*perRound)
				}
				return
			}
			want := fmt.Sprintf("tool calls %d of %d", tc.want, tc.want)
			if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, want) || !strings.Contains(f.Reason, "Config.MaxToolCalls") {
				t.Fatalf("result %#v, want a failure naming %q", res, want)
			}
			if n := ran.Load(); n != tc.want {
				t.Errorf("%d tool calls, want %d", n, tc.want)
			}
		})
	}
}

// A swarm that hands off to itself makes a chain of child runs, each with
// its own max turns: the default limit holds over the whole tree of runs,
// and the refusal below fails every run up to the root.
func TestRunawaySwarmSelfHandoffEndsTheWholeTree(t *testing.T) {
	for name, open := range freshStores(t) {
		t.Run(name, func(t *testing.T) {
			var def *swarm.Swarm[string, string]
			def = swarm.Define[string, string]("loop", "Loops", func(string) swarm.Spec {
				return swarm.Spec{Instructions: "loop", Handoffs: []swarm.Handoff{swarm.ToSwarm(def)}}
			})
			var steps []scripted.Step
			for range 50 {
				steps = append(steps, scripted.Tools(scripted.CallTool("handoff_to_loop", map[string]any{"request": "again"})))
			}
			m := &countedModel{Model: scripted.New(scripted.Script{"loop": steps}, scripted.WithoutBookkeeping())}
			rt, err := swarm.New(swarm.Config{Store: open(t), Model: m})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			ctx := ctxT(t)
			res, run, err := def.Run(ctx, rt, "go")
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("model calls %d of %d", swarm.DefaultMaxModelCalls, swarm.DefaultMaxModelCalls)
			if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, want) {
				t.Fatalf("result %#v, want a failure naming %q", res, want)
			}
			// Calls a child reserved and did not make before the tree ended
			// are made by no one: the tree stops at most a little early.
			if n := m.calls.Load(); n > swarm.DefaultMaxModelCalls || n < swarm.DefaultMaxModelCalls*9/10 {
				t.Errorf("%d model calls, want at most the limit, %d, and close to it", n, swarm.DefaultMaxModelCalls)
			}
			t.Logf("%d model calls", m.calls.Load())
			if kids := children(t, rt, run.ID()); len(kids) == 0 {
				t.Fatal("no child runs")
			}
			all, err := rt.List(ctx, store.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range all {
				if s.State != swarm.StateFailed && s.State != swarm.StateCompleted {
					t.Errorf("run %s (depth %d) is %s after its tree ended", s.ID, s.Depth, s.State)
				}
			}
		})
	}
}

// stallingModel is a countedModel whose call number at never returns
// until its context ends: the process "dies" with that call in flight.
type stallingModel struct {
	countedModel
	at      int64
	stalled chan struct{}
}

func (m *stallingModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if m.calls.Load()+1 == m.at {
		m.calls.Add(1)
		close(m.stalled)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return m.countedModel.Generate(ctx, req)
}

// The limits a tree starts with are journaled with it: a runtime that
// recovers the tree after its process died applies them, whatever its own
// Config says, and the calls the dead process reserved and never made
// (at most one block, a 64th of the limit) are all the tree loses.
func TestRunawayLimitHoldsAcrossRecovery(t *testing.T) {
	const limit = 640 // blocks of 10
	path := filepath.Join(t.TempDir(), "runs.db")
	var stores []store.Store
	for range 2 {
		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	def, next := cycle(true)
	script := runawayScript(next, 2*limit)
	m1 := &stallingModel{countedModel: countedModel{Model: scripted.New(script, scripted.WithoutBookkeeping())}, at: 305, stalled: make(chan struct{})}
	rt1, err := swarm.New(swarm.Config{Store: stores[0], Model: m1, MaxModelCalls: limit})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt1.Register(def); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	run, err := def.Start(ctx, rt1, "go")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-m1.stalled:
	case <-ctx.Done():
		t.Fatalf("the first process made %d calls and never reached call %d", m1.calls.Load(), m1.at)
	}
	rt1.Close() // the process ends with a call in flight and calls reserved

	m2 := &countedModel{Model: scripted.New(script, scripted.WithoutBookkeeping())}
	rt2, err := swarm.New(swarm.Config{Store: stores[1], Model: m2}) // the default limit, 1000
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	if err := rt2.Register(def); err != nil {
		t.Fatal(err)
	}
	if _, err := rt2.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := rt2.Wait(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("model calls %d of %d", limit, limit)
	if st.State != swarm.StateFailed || !strings.Contains(st.Reason, want) {
		t.Fatalf("after recovery: %s %q, want failed naming %q", st.State, st.Reason, want)
	}
	t.Logf("model calls: %d before the crash, %d after", m1.calls.Load(), m2.calls.Load())
	if got := m1.calls.Load() + m2.calls.Load(); got > limit || got < limit-limit/64 {
		t.Errorf("%d model calls across both processes (%d, %d), want at most %d and at least %d", got, m1.calls.Load(), m2.calls.Load(), limit, limit-limit/64)
	}
}

// With Pause, reaching the tool call limit pauses the run before the call
// runs; one resume lifts the limit and the call, and the rest, run once.
func TestRunawayToolCallLimitPauses(t *testing.T) {
	var ran atomic.Int64
	echo := swarm.NewTool("echo", "echoes", func(_ context.Context, in echoIn) (int, error) {
		ran.Add(1)
		return in.N, nil
	})
	var steps []scripted.Step
	for i := range 8 {
		steps = append(steps, scripted.Tools(scripted.CallTool("echo", map[string]any{"n": i})))
	}
	steps = append(steps, scripted.Text("done"))
	def := swarm.Define[string, string]("busy", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{echo}, MaxTurns: 10}
	})
	rt, err := swarm.New(swarm.Config{Model: scripted.New(scripted.Script{"busy": steps}, scripted.WithoutBookkeeping())})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := ctxT(t)
	res, run, err := def.Run(ctx, rt, "go", swarm.WithBudget(swarm.Budget{ToolCalls: 5, Pause: true}))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := res.(swarm.Paused); !ok || !strings.Contains(p.Reason, "tool calls 5 of 5") {
		t.Fatalf("result %#v, want a pause naming the tool call limit", res)
	}
	if n := ran.Load(); n != 5 {
		t.Errorf("%d tool calls before the pause, want 5", n)
	}
	if err := run.Resume(ctx, "go on"); err != nil {
		t.Fatal(err)
	}
	res, err = run.Wait(ctx)
	if c, ok := res.(swarm.Completed[string]); err != nil || !ok || c.Output != "done" {
		t.Fatalf("after one resume: %#v %v", res, err)
	}
	if n := ran.Load(); n != 8 {
		t.Errorf("%d tool calls in all, want 8, each once", n)
	}
}

// A run journaled before runs had call limits (its start record has no
// budget) gets the limits of the runtime that recovers it.
func TestRunawayRunFromBeforeTheLimitsIsBounded(t *testing.T) {
	st := memory.New()
	def, next := cycle(true)
	m := &countedModel{Model: scripted.New(runawayScript(next, 2*swarm.DefaultMaxModelCalls), scripted.WithoutBookkeeping())}
	rt, err := swarm.New(swarm.Config{Store: st, Model: m, MaxModelCalls: 90})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	start := store.Record{Key: "start", Type: string(swarm.EventStarted), Time: time.Now(),
		Data: []byte(`{"swarm":"cycle","input":"go","max_turns":10,"agent":"cycle"}`)}
	if _, err := st.Create(ctx, store.Run{ID: "old", Swarm: "cycle", MaxTurns: 10, Agent: "cycle"}, "gone", time.Millisecond, []store.Record{start}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the old owner's lease expires
	if ids, err := rt.Recover(ctx); err != nil || len(ids) != 1 {
		t.Fatalf("recover: %v %v", ids, err)
	}
	s, err := rt.Wait(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if s.State != swarm.StateFailed || !strings.Contains(s.Reason, "model calls 90 of 90") {
		t.Fatalf("recovered run: %s %q, want failed at the runtime's limit", s.State, s.Reason)
	}
	if n := m.calls.Load(); n != 90 {
		t.Errorf("%d model calls, want 90", n)
	}
}
