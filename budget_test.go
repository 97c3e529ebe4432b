package swarm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
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
)

// counting counts, at the model, the requests the runtime sends and the
// tokens and cost of the responses it gets back: the test's own figures,
// not the runtime's.
type counting struct {
	m model.Model
	// block, when set, holds each request of its agent until the call's
	// context ends.
	block string

	calls, blocked atomic.Int64
	mu             sync.Mutex
	tokens         int64
	cost           float64
}

func (c *counting) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	c.calls.Add(1)
	if req.Agent == c.block && c.block != "" {
		c.blocked.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	resp, err := c.m.Generate(ctx, req)
	if err == nil {
		c.mu.Lock()
		c.tokens += resp.Usage.InputTokens + resp.Usage.OutputTokens
		c.cost += resp.Usage.Cost
		c.mu.Unlock()
	}
	return resp, err
}

func (c *counting) spent() (int64, float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tokens, c.cost
}

// freshStores opens a fresh store of each kind: memory, SQLite and, when
// a server is available, PostgreSQL.
func freshStores(t *testing.T) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"memory": func(t *testing.T) store.Store { return memory.New() },
		"sqlite": func(t *testing.T) store.Store {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "runs.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(t *testing.T) store.Store {
			s, err := postgres.Open(t.Context(), pgtest.URL(t, "pool_max_conns=8"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

func countingRuntime(t *testing.T, st store.Store, script scripted.Script, cfg swarm.Config) (*swarm.Runtime, *counting) {
	t.Helper()
	c := &counting{m: scripted.New(script)}
	cfg.Store, cfg.Model = st, c
	cfg.PollInterval = 10 * time.Millisecond
	cfg.RetryBackoff = time.Millisecond
	rt, err := swarm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, c
}

// fanOut is a root response handing off to the ticketing swarm n times in
// parallel, then the root's answer.
func fanOut(n int, child []scripted.Step) scripted.Script {
	calls := make([]scripted.ToolCall, n)
	for i := range calls {
		calls[i] = scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": fmt.Sprint("e", i), "seats": 1}})
	}
	return scripted.Script{
		"activities": {{ToolCalls: calls, Usage: model.Usage{InputTokens: 5, Cost: 0.0005}}, scripted.Text("done")},
		"ticketing":  child,
	}
}

// TestBudgetIsOnePoolAcrossParallelChildren: the model calls of a tree never
// exceed ModelCalls, however many children run at once, on every store.
func TestBudgetIsOnePoolAcrossParallelChildren(t *testing.T) {
	for name, open := range freshStores(t) {
		for _, tc := range []struct{ n, limit int }{{3, 2}, {200, 50}} {
			t.Run(fmt.Sprintf("%s/%d-way", name, tc.n), func(t *testing.T) {
				child := []scripted.Step{{Text: `{"confirmation":"c"}`, Delay: time.Millisecond}}
				rt, c := countingRuntime(t, open(t), fanOut(tc.n, child), swarm.Config{})
				ctx := ctxT(t)
				res, run, err := activities(swarm.ToSwarm(ticketing())).Run(ctx, rt, "x",
					swarm.WithBudget(swarm.Budget{ModelCalls: int64(tc.limit)}))
				if err != nil {
					t.Fatal(err)
				}
				want := fmt.Sprintf("budget exceeded: model calls %d of %d", tc.limit, tc.limit)
				if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, want) {
					t.Fatalf("result %#v, want failed with %q", res, want)
				}
				if got := c.calls.Load(); got != int64(tc.limit) {
					t.Errorf("the model got %d calls, budget %d", got, tc.limit)
				}
				if kids := children(t, rt, run.ID()); len(kids) != tc.n {
					t.Errorf("%d child runs, want %d", len(kids), tc.n)
				}
			})
		}
	}
}

// TestBudgetPoolParallelAgentHandoffs: agents handed off to in parallel
// inside one run share the pool too.
func TestBudgetPoolParallelAgentHandoffs(t *testing.T) {
	const n, limit = 6, 3
	calls := make([]scripted.ToolCall, n)
	for i := range calls {
		calls[i] = scripted.CallTool("handoff_to_weather", map[string]any{"request": fmt.Sprint("day ", i)})
	}
	rt, c := countingRuntime(t, memory.New(), scripted.Script{
		"planner": {scripted.Tools(calls...), scripted.Text(`{"activity":"x"}`)},
		"weather": {{Text: "sunny", Delay: time.Millisecond}},
	}, swarm.Config{})
	ctx := ctxT(t)
	res, _, err := planner().Run(ctx, rt, "x", swarm.WithBudget(swarm.Budget{ModelCalls: limit}))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, "model calls 3 of 3") {
		t.Fatalf("result %#v", res)
	}
	if got := c.calls.Load(); got != limit {
		t.Errorf("the model got %d calls, budget %d", got, limit)
	}
}

// TestBudgetTokensAndCostOvershootAtMostTheCallsInFlight: a call starts only
// while the pool is below the limit, so the tree passes it by at most the
// calls in flight when it crossed: here at most MaxParallel children, one
// call each.
func TestBudgetTokensAndCostOvershootAtMostTheCallsInFlight(t *testing.T) {
	const n, parallel = 200, 8
	const perTokens, perCost = 10, 0.01
	child := []scripted.Step{{Text: `{"confirmation":"c"}`, Usage: model.Usage{InputTokens: 7, OutputTokens: 3, Cost: perCost}, Delay: time.Millisecond}}
	for _, tc := range []struct {
		name   string
		budget swarm.Budget
	}{
		{"tokens", swarm.Budget{Tokens: 205}},
		{"cost", swarm.Budget{Cost: 0.205}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, c := countingRuntime(t, memory.New(), fanOut(n, child), swarm.Config{MaxParallel: parallel})
			ctx := ctxT(t)
			res, _, err := activities(swarm.ToSwarm(ticketing())).Run(ctx, rt, "x", swarm.WithBudget(tc.budget))
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, "budget exceeded: "+tc.name) {
				t.Fatalf("result %#v", res)
			}
			tokens, cost := c.spent()
			switch tc.name {
			case "tokens":
				if max := tc.budget.Tokens - 1 + parallel*perTokens; tokens < tc.budget.Tokens || tokens > max {
					t.Errorf("tokens at the model %d, want from %d to %d", tokens, tc.budget.Tokens, max)
				}
			case "cost":
				if max := tc.budget.Cost + parallel*perCost; cost < tc.budget.Cost || cost > max+1e-9 {
					t.Errorf("cost at the model %g, want from %g to %g", cost, tc.budget.Cost, max)
				}
			}
			if got := c.calls.Load(); got >= n+1 {
				t.Errorf("every one of the %d calls ran", got)
			}
		})
	}
}

// TestBudgetPausedChildNeedsOneResume: a child paused by the tree's budget
// pauses its parent; one resume of the root lifts the budget for the whole
// tree, and the run completes.
func TestBudgetPausedChildNeedsOneResume(t *testing.T) {
	rt, c := countingRuntime(t, memory.New(), scripted.Script{
		"activities": {
			scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "x", "seats": 1}})),
			scripted.Text("done"),
		},
		"ticketing": {
			scripted.Tools(scripted.CallTool("lookup", map[string]any{"q": "seats"})),
			scripted.Text(`{"confirmation":"c"}`),
		},
	}, swarm.Config{})
	if err := rt.RegisterTool(lookup); err != nil {
		t.Fatal(err)
	}
	tk := swarm.Define[Ticket, Booking]("ticketing", "Books tickets", func(Ticket) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{lookup}}
	})
	ctx := ctxT(t)
	res, run, err := activities(swarm.ToSwarm(tk)).Run(ctx, rt, "x", swarm.WithBudget(swarm.Budget{ModelCalls: 2, Pause: true}))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := res.(swarm.Paused); !ok || !strings.Contains(p.Reason, "budget exceeded: model calls") || p.Waiting == "" {
		t.Fatalf("result %#v, want a pause surfaced from the child", res)
	}
	resumeOnce(t, ctx, run, c)
	for _, k := range children(t, rt, run.ID()) {
		if k.State != swarm.StateCompleted {
			t.Errorf("child %s %s: %s", k.ID, k.State, k.Reason)
		}
	}
}

// resumeOnce checks that the model got the 2 calls of the budget before the
// run paused, then resumes it once and expects it to complete.
func resumeOnce(t *testing.T, ctx context.Context, run *swarm.Run[string], c *counting) {
	t.Helper()
	if got := c.calls.Load(); got != 2 {
		t.Errorf("the model got %d calls before the pause, budget 2", got)
	}
	if err := run.Resume(ctx, "go on"); err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctx)
	if c, ok := res.(swarm.Completed[string]); err != nil || !ok || c.Output != "done" {
		t.Fatalf("after one resume: %#v %v", res, err)
	}
}

// TestBudgetPausedParallelChildrenNeedOneResume: with the pool spent, every
// child of a fan-out pauses; one resume lets them all continue.
func TestBudgetPausedParallelChildrenNeedOneResume(t *testing.T) {
	const n = 3
	child := []scripted.Step{scripted.Text(`{"confirmation":"c"}`)}
	rt, c := countingRuntime(t, memory.New(), fanOut(n, child), swarm.Config{})
	ctx := ctxT(t)
	res, run, err := activities(swarm.ToSwarm(ticketing())).Run(ctx, rt, "x", swarm.WithBudget(swarm.Budget{ModelCalls: 2, Pause: true}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Paused); !ok {
		t.Fatalf("result %#v", res)
	}
	resumeOnce(t, ctx, run, c)
	if got := c.calls.Load(); got != n+2 {
		t.Errorf("the model got %d calls in all, want %d", got, n+2)
	}
}

// TestBudgetReplayDoesNotReserve: a journaled response replayed when a run
// continues (after a pause, or a recovery) takes nothing from the pool.
func TestBudgetReplayDoesNotReserve(t *testing.T) {
	rt, c := countingRuntime(t, memory.New(), scripted.Script{
		"planner": {
			scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "which day?"})),
			scripted.Text(`{"activity":"x"}`),
		},
	}, swarm.Config{})
	ctx := ctxT(t)
	res, run, err := planner().Run(ctx, rt, "x", swarm.WithBudget(swarm.Budget{ModelCalls: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Paused); !ok {
		t.Fatalf("result %#v", res)
	}
	if err := run.Resume(ctx, "Saturday"); err != nil {
		t.Fatal(err)
	}
	if res, err = run.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Completed[Activity]); !ok {
		t.Fatalf("after the resume: %#v", res)
	}
	if got := c.calls.Load(); got != 2 {
		t.Errorf("the model got %d calls, want 2", got)
	}
}

// TestBudgetHoldsAcrossRecovery: the pool is in the store, so a tree whose
// process dies mid-call and that another runtime recovers stays within
// ModelCalls, counting the calls the dead process had in flight.
func TestBudgetHoldsAcrossRecovery(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			var st1, st2 store.Store
			if name == "sqlite" {
				path := filepath.Join(t.TempDir(), "runs.db")
				for _, p := range []*store.Store{&st1, &st2} {
					s, err := sqlite.Open(t.Context(), path)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					*p = s
				}
			} else {
				url := pgtest.URL(t, "pool_max_conns=8")
				for _, p := range []*store.Store{&st1, &st2} {
					s, err := postgres.Open(t.Context(), url)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					*p = s
				}
			}
			script := fanOut(3, []scripted.Step{scripted.Text(`{"confirmation":"c"}`)})
			def := activities(swarm.ToSwarm(ticketing()))
			rt1, c1 := countingRuntime(t, st1, script, swarm.Config{})
			c1.block = "ticketing"
			if err := rt1.Register(def); err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t)
			id, err := rt1.Start(ctx, "activities", json.RawMessage(`"x"`), swarm.WithBudget(swarm.Budget{ModelCalls: 3}))
			if err != nil {
				t.Fatal(err)
			}
			// Two children hold a reserved call each, in flight; the third
			// found the pool spent and failed.
			for failed := 0; c1.blocked.Load() < 2 || failed < 1; {
				if ctx.Err() != nil {
					t.Fatalf("children in flight: %d, failed: %d", c1.blocked.Load(), failed)
				}
				time.Sleep(5 * time.Millisecond)
				failed = 0
				for _, k := range children(t, rt1, id) {
					if k.State == swarm.StateFailed {
						failed++
					}
				}
			}
			rt1.Close() // the process ends; its calls in flight are lost

			rt2, c2 := countingRuntime(t, st2, script, swarm.Config{})
			if err := rt2.Register(def); err != nil {
				t.Fatal(err)
			}
			if _, err := rt2.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			st, err := rt2.Wait(ctx, id)
			if err != nil {
				all, _ := rt2.List(context.Background(), store.Filter{})
				for _, r := range all {
					row, _ := rt2.Store().Get(context.Background(), r.ID)
					t.Logf("%s %s %q owner=%q epoch=%d lease=%s last=%d", r.ID, r.State, r.Reason, row.Owner, row.Epoch, time.Until(row.LeaseUntil), row.LastSeq)
				}
				t.Fatal(err)
			}
			if st.State != swarm.StateFailed || !strings.Contains(st.Reason, "model calls 3 of 3") {
				t.Fatalf("after recovery: %s %q", st.State, st.Reason)
			}
			if got := c1.calls.Load() + c2.calls.Load(); got != 3 {
				t.Errorf("the model got %d calls across both processes, budget 3", got)
			}
		})
	}
}

// blockingTool blocks until its context ends, and notes that it did; a
// broken deadline fails the test after a bound instead of hanging it.
func blockingTool(cancelled *atomic.Int64, calls *atomic.Int64) swarm.Tool {
	return swarm.NewTool("slow", "Takes long", func(ctx context.Context, in struct{}) (string, error) {
		if calls.Add(1) > 1 {
			return "fast this time", nil
		}
		select {
		case <-ctx.Done():
			cancelled.Add(1)
			return "", ctx.Err()
		case <-time.After(5 * time.Second):
			return "never cancelled", nil
		}
	})
}

// TestWallTimeCancelsToolsInFlight: the wall-time budget is a deadline on the
// tree: a tool in flight is cancelled and the run fails, or pauses, naming
// the wall time; a resume lifts it.
func TestWallTimeCancelsToolsInFlight(t *testing.T) {
	for _, pause := range []bool{false, true} {
		t.Run(fmt.Sprint("pause=", pause), func(t *testing.T) {
			var cancelled, calls atomic.Int64
			slow := blockingTool(&cancelled, &calls)
			rt, _ := countingRuntime(t, memory.New(), scripted.Script{
				"planner": {scripted.Tools(scripted.CallTool("slow", map[string]any{})), scripted.Text(`{"activity":"x"}`)},
			}, swarm.Config{})
			p := swarm.Define[string, Activity]("planner", "", func(string) swarm.Spec {
				return swarm.Spec{Tools: []swarm.Tool{slow}}
			})
			ctx := ctxT(t)
			res, run, err := p.Run(ctx, rt, "x", swarm.WithBudget(swarm.Budget{WallTime: time.Second, Pause: pause}))
			if err != nil {
				t.Fatal(err)
			}
			if cancelled.Load() != 1 {
				t.Errorf("the tool in flight was not cancelled")
			}
			if !pause {
				if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, "budget exceeded: wall time") {
					t.Fatalf("result %#v", res)
				}
				return
			}
			if p, ok := res.(swarm.Paused); !ok || !strings.Contains(p.Reason, "budget exceeded: wall time") {
				t.Fatalf("result %#v", res)
			}
			if err := run.Resume(ctx, "take your time"); err != nil {
				t.Fatal(err)
			}
			if res, err = run.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ok := res.(swarm.Completed[Activity]); !ok {
				t.Fatalf("after lifting the budget: %#v", res)
			}
		})
	}
}

// TestWallTimeCancelsChildInFlight: a child swarm in flight when the tree's
// wall time passes is cancelled too, and the root fails (or pauses) naming
// it; with Pause, one resume lets the whole tree finish.
func TestWallTimeCancelsChildInFlight(t *testing.T) {
	for _, pause := range []bool{false, true} {
		t.Run(fmt.Sprint("pause=", pause), func(t *testing.T) {
			var cancelled, calls atomic.Int64
			slow := blockingTool(&cancelled, &calls)
			rt, _ := countingRuntime(t, memory.New(), scripted.Script{
				"activities": {
					scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "x", "seats": 1}})),
					scripted.Text("done"),
				},
				"ticketing": {scripted.Tools(scripted.CallTool("slow", map[string]any{})), scripted.Text(`{"confirmation":"c"}`)},
			}, swarm.Config{})
			tk := swarm.Define[Ticket, Booking]("ticketing", "Books tickets", func(Ticket) swarm.Spec {
				return swarm.Spec{Tools: []swarm.Tool{slow}}
			})
			ctx := ctxT(t)
			// Long enough for the child to reach its tool on a busy machine:
			// the deadline must pass while the tool is in flight.
			res, run, err := activities(swarm.ToSwarm(tk)).Run(ctx, rt, "x", swarm.WithBudget(swarm.Budget{WallTime: time.Second, Pause: pause}))
			if err != nil {
				t.Fatal(err)
			}
			// The root may end a moment before the child's tool sees its
			// cancellation.
			for cancelled.Load() != 1 {
				if ctx.Err() != nil || calls.Load() == 0 {
					t.Fatalf("the child's tool in flight was not cancelled (%d calls)", calls.Load())
				}
				time.Sleep(5 * time.Millisecond)
			}
			kids := children(t, rt, run.ID())
			if len(kids) != 1 {
				t.Fatalf("%d children", len(kids))
			}
			if !pause {
				if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, "budget exceeded: wall time") {
					t.Fatalf("result %#v", res)
				}
				st, err := rt.Wait(ctx, kids[0].ID)
				if err != nil {
					t.Fatal(err)
				}
				if st.State != swarm.StateFailed && st.State != swarm.StateStopped {
					t.Errorf("child %s: %s", st.State, st.Reason)
				}
				return
			}
			if p, ok := res.(swarm.Paused); !ok || !strings.Contains(p.Reason, "budget exceeded: wall time") {
				t.Fatalf("result %#v", res)
			}
			if err := run.Resume(ctx, "take your time"); err != nil {
				t.Fatal(err)
			}
			if res, err = run.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
				t.Fatalf("after one resume: %#v", res)
			}
		})
	}
}

// TestBudgetCountsRetries: a retried request is a request to the model too,
// and takes a call from the pool.
func TestBudgetCountsRetries(t *testing.T) {
	rt, c := countingRuntime(t, memory.New(), scripted.Script{
		"looker": {
			scripted.Fail(model.KindRateLimited),
			scripted.Tools(scripted.CallTool("lookup", map[string]any{"q": "x"})),
			scripted.Text(`{"activity":"x"}`),
		},
	}, swarm.Config{})
	s := swarm.Define[string, Activity]("looker", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{lookup}}
	})
	ctx := ctxT(t)
	res, _, err := s.Run(ctx, rt, "x", swarm.WithBudget(swarm.Budget{ModelCalls: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, "model calls 2 of 2") {
		t.Fatalf("result %#v", res)
	}
	if got := c.calls.Load(); got != 2 {
		t.Errorf("the model got %d calls, budget 2", got)
	}
}

// spendCounter counts the Spends of the store it wraps, and hides its
// store.Reserver.
type spendCounter struct {
	store.Store
	spends atomic.Int64
}

func (s *spendCounter) Spend(ctx context.Context, id string, d store.Pool) (store.Pool, error) {
	s.spends.Add(1)
	return s.Store.Spend(ctx, id, d)
}

// reservingCounter is a spendCounter that keeps the wrapped store's
// store.Reserver.
type reservingCounter struct{ *spendCounter }

func (s reservingCounter) CreateReserving(ctx context.Context, r store.Run, owner string, lease time.Duration, records []store.Record, d store.Pool) (store.Lease, store.Pool, error) {
	return s.Store.(store.Reserver).CreateReserving(ctx, r, owner, lease, records, d)
}

// TestBudgetFirstBlockReservedAtCreate: on a store.Reserver a run tree's
// root takes its first block of calls in the transaction that creates it,
// so a run whose calls fit in that block never calls Spend; on other stores
// it reserves the same block with one Spend. Either way the pool holds the
// block.
func TestBudgetFirstBlockReservedAtCreate(t *testing.T) {
	for name, open := range freshStores(t) {
		if name == "postgres" {
			continue
		}
		for _, reserving := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/reserving=%v", name, reserving), func(t *testing.T) {
				sc := &spendCounter{Store: open(t)}
				var st store.Store = sc
				if reserving {
					st = reservingCounter{sc}
				}
				rt, c := countingRuntime(t, st, scripted.Script{"planner": {scripted.Text(`{"activity":"x"}`)}}, swarm.Config{})
				res, run, err := planner().Run(ctxT(t), rt, "x")
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := res.(swarm.Completed[Activity]); !ok {
					t.Fatalf("result %#v", res)
				}
				want := int64(1)
				if reserving {
					want = 0
				}
				if got := sc.spends.Load(); got != want || c.calls.Load() != 1 {
					t.Errorf("%d Spends and %d model calls, want %d and 1", got, c.calls.Load(), want)
				}
				p, err := sc.Store.Spend(t.Context(), run.ID(), store.Pool{})
				if err != nil {
					t.Fatal(err)
				}
				// The default limits' blocks: 1000/64 calls, 32 tools.
				if p != (store.Pool{Calls: 15, Tools: 32}) {
					t.Errorf("pool %+v, want 15 calls and 32 tools reserved", p)
				}
			})
		}
	}
}
