package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/workflow"
)

// benchStores are the stores the benchmarks run on: a new one each call.
var benchStores = []struct {
	name string
	open func(b *testing.B) store.Store
}{
	{"memory", func(b *testing.B) store.Store { return memory.New() }},
	{"sqlite", func(b *testing.B) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "runs.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}},
}

func inc(_ context.Context, n int) (int, error) { return n + 1, nil }

// chain is a sequence of n function nodes, each adding one.
func chain(n int) workflow.Step[int, int] {
	s := workflow.Func("n0", inc)
	for i := 1; i < n; i++ {
		s = workflow.Then(s, workflow.Func("n"+strconv.Itoa(i), inc))
	}
	return s
}

func benchRuntime(b *testing.B, s store.Store, m model.Model, defs ...swarm.Definition) *swarm.Runtime {
	b.Helper()
	if m == nil {
		// The runtime wants a model even for a workflow that calls none.
		m = scripted.New(nil)
	}
	rt, err := swarm.New(swarm.Config{Store: s, Model: m, MaxParallel: 1000, MaxModelCalls: 10000, MaxToolCalls: 100000, PollInterval: 5 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	if err := rt.Register(defs...); err != nil {
		b.Fatal(err)
	}
	return rt
}

// BenchmarkNodeOverhead runs a workflow of 100 function nodes in a
// sequence (start and end of the run included) and reports the time and
// allocations per node; BenchmarkPlainCall is the same function called
// from Go.
func BenchmarkNodeOverhead(b *testing.B) {
	const nodes = 100
	def := workflow.Define("chain", "adds", chain(nodes))
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			rt := benchRuntime(b, st.open(b), nil, def)
			defer rt.Close()
			ctx := context.Background()
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for b.Loop() {
				id, err := rt.Start(ctx, "chain", json.RawMessage(`0`))
				if err != nil {
					b.Fatal(err)
				}
				s, err := rt.Wait(ctx, id)
				if err != nil || string(s.Result) != strconv.Itoa(nodes) {
					b.Fatalf("%s %s %v", s.State, s.Result, err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*nodes), "µs/node")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(b.N*nodes), "allocs/node")
		})
	}
}

// BenchmarkPlainCall is the node's function called directly.
func BenchmarkPlainCall(b *testing.B) {
	ctx := context.Background()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n, _ = inc(ctx, n)
	}
	if n == 0 {
		b.Fatal("no calls")
	}
}

// BenchmarkRecovery kills a graph of 100 function nodes at node 50 (its
// runtime closes while node 50 runs, as a crash would leave it: 49
// journaled nodes) and measures how long a new runtime on the same store
// takes from its start to running node 50 again (replaying the first 49).
func BenchmarkRecovery(b *testing.B) {
	const nodes, kill = 100, 50
	var (
		blocking atomic.Bool
		reached  = make(chan struct{}, 1)
	)
	g := workflow.NewGraph[int, int]("g", "n1", nodes)
	for i := 1; i <= nodes; i++ {
		g.Add(workflow.Node(workflow.Func("n"+strconv.Itoa(i), func(ctx context.Context, n int) (int, error) {
			if i == kill {
				reached <- struct{}{}
				if blocking.Load() {
					<-ctx.Done()
					return 0, ctx.Err()
				}
			}
			return n + 1, nil
		})))
		if i > 1 {
			g.Edge("n"+strconv.Itoa(i-1), "n"+strconv.Itoa(i))
		}
	}
	def := workflow.Define("hundred", "100 nodes", g.Step())
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				s := st.open(b)
				blocking.Store(true)
				a := benchRuntime(b, s, nil, def)
				id, err := a.Start(ctx, "hundred", json.RawMessage(`0`))
				if err != nil {
					b.Fatal(err)
				}
				<-reached
				a.Close()
				blocking.Store(false)
				b.StartTimer()
				rt := benchRuntime(b, s, nil, def)
				if _, err := rt.Recover(ctx); err != nil {
					b.Fatal(err)
				}
				<-reached
				b.StopTimer()
				if st, err := rt.Wait(ctx, id); err != nil || string(st.Result) != strconv.Itoa(nodes) {
					b.Fatalf("%s %s %v", st.State, st.Result, err)
				}
				rt.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkWaitingBranches starts 1,000 parallel branches that each wait
// on a model call and reports the memory (heap and goroutine stacks in
// use) and goroutines each waiting branch holds.
func BenchmarkWaitingBranches(b *testing.B) {
	const branches = 1000
	var waiting atomic.Int64
	release := make(chan struct{})
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		waiting.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "ok"}}, nil
	})
	def := workflow.Define("fanout", "asks 1,000 times", workflow.ForEach("each", workflow.Agent[string, string](agent("worker"))))
	in := make([]string, branches)
	for i := range in {
		in[i] = fmt.Sprint("task ", i)
	}
	input, _ := json.Marshal(in)
	ctx := context.Background()
	var perBranch, stacks, goroutines float64
	for b.Loop() {
		b.StopTimer()
		rt := benchRuntime(b, memory.New(), m, def)
		waiting.Store(0)
		release = make(chan struct{})
		var before, during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		b.StartTimer()
		id, err := rt.Start(ctx, "fanout", input)
		if err != nil {
			b.Fatal(err)
		}
		for waiting.Load() < branches {
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&during)
		perBranch = float64(during.HeapInuse-before.HeapInuse) / branches
		stacks = float64(during.StackInuse-before.StackInuse) / branches
		goroutines = float64(runtime.NumGoroutine()-g0) / branches
		close(release)
		if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
			b.Fatalf("%s %s %v", st.State, st.Reason, err)
		}
		rt.Close()
		b.StartTimer()
	}
	b.ReportMetric(perBranch, "heapB/branch")
	b.ReportMetric(stacks, "stackB/branch")
	b.ReportMetric(goroutines, "goroutines/branch")
}
