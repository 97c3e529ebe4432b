package swarm_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// watchedRuntime returns a runtime on cfg (a memory store unless cfg has
// a store) whose model plays script after showing each request to watch.
func watchedRuntime(t *testing.T, cfg swarm.Config, script scripted.Script, watch func(*model.Request)) (*swarm.Runtime, *scripted.Model) {
	t.Helper()
	m := scripted.New(script)
	if cfg.Store == nil {
		cfg.Store = memory.New()
	}
	cfg.Model = model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		watch(req)
		return m.Generate(ctx, req)
	})
	rt, err := swarm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, m
}

// barrierTool is a tool whose calls each wait at bar (counted by its Enter
// and Leave), stay a while longer, and answer with their argument. The
// stay gives a call beyond a concurrency limit time to start and show in
// bar's peak; it bounds nothing and is never asserted.
func barrierTool(ctx context.Context, bar *swarmtest.Barrier, stay time.Duration) swarm.Tool {
	return swarm.NewTool("slow", "Takes a while", func(_ context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		bar.Enter()
		defer bar.Leave()
		if err := bar.Wait(ctx); err != nil {
			return "", err // reported by the test through bar.Err
		}
		time.Sleep(stay)
		return "done " + strconv.Itoa(in.N), nil
	})
}

// parallelRun runs a swarm whose first response calls the slow tool n times
// on a runtime with the given MaxParallel, and returns the tool results the
// orchestrator saw, in order.
func parallelRun(t *testing.T, n, maxParallel int, bar *swarmtest.Barrier, stay time.Duration) []string {
	t.Helper()
	ctx := swarmtest.Context(t)
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var calls []scripted.ToolCall
	for i := range n {
		calls = append(calls, scripted.CallTool("slow", map[string]any{"n": i}))
	}
	var seen []string
	rt, m := watchedRuntime(t, swarm.Config{MaxParallel: maxParallel}, scripted.Script{"fan": {scripted.Tools(calls...), scripted.Text("ok")}}, func(req *model.Request) {
		if req.Call == 1 {
			for _, msg := range req.Messages {
				if msg.Role == model.RoleTool {
					seen = append(seen, msg.Content)
				}
			}
		}
	})
	tool := barrierTool(bctx, bar, stay)
	s := swarm.Define[string, string]("fan", "", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{tool}} })
	res, run, err := s.Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Completed[string]); !ok {
		t.Fatalf("result %#v, want completed", res)
	}
	swarmtest.AssertScriptConsumed(t, m, run.ID())
	return seen
}

func TestParallelToolCallsRunConcurrently(t *testing.T) {
	const n = 6
	// Each call waits until all n have started: calls run one at a time
	// (or fewer than n at a time) break the barrier at its deadline.
	bar := swarmtest.NewBarrier(n)
	seen := parallelRun(t, n, 0, bar, 0)
	if err := bar.Err(); err != nil {
		t.Fatalf("tool calls of one response did not run concurrently: %v", err)
	}
	// Results return in call order, whatever order the calls ended in.
	if len(seen) != n {
		t.Fatalf("the model saw %d tool results, want %d: %q", len(seen), n, seen)
	}
	for i, s := range seen {
		if want := fmt.Sprint("done ", i); s != want {
			t.Errorf("tool result %d = %q, want %q", i, s, want)
		}
	}
}

func TestMaxParallelBoundsConcurrentCalls(t *testing.T) {
	for _, tc := range []struct{ n, k int }{{6, 2}, {9, 3}, {4, 1}} {
		t.Run(fmt.Sprintf("%d_calls_max_%d", tc.n, tc.k), func(t *testing.T) {
			// Generations of k calls wait for each other: a limit below k
			// never fills one (the barrier breaks at its deadline), and a
			// limit above k shows in the peak.
			bar := swarmtest.NewBarrier(tc.k)
			seen := parallelRun(t, tc.n, tc.k, bar, 50*time.Millisecond)
			if err := bar.Err(); err != nil {
				t.Fatalf("MaxParallel %d: fewer than %d calls ran at once: %v", tc.k, tc.k, err)
			}
			if p := bar.Peak(); p != tc.k {
				t.Errorf("MaxParallel %d: peak of %d calls running at once", tc.k, p)
			}
			if got := bar.Total(); got != tc.n {
				t.Errorf("%d tool calls ran, want %d", got, tc.n)
			}
			if len(seen) != tc.n {
				t.Errorf("the model saw %d tool results, want %d", len(seen), tc.n)
			}
		})
	}
}
