package workflow_test

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/workflow"
)

// fanOutGraph is a graph whose start fans out to n agent nodes, each one
// model call, joined by a function that counts their outputs.
func fanOutGraph(n int) swarm.Definition {
	split := workflow.Node(workflow.Func("split", func(_ context.Context, s string) (string, error) { return s, nil }))
	count := workflow.Node(workflow.Func("count", func(_ context.Context, m map[string]string) (int, error) { return len(m), nil }))
	g := workflow.NewGraph[string, int]("fan", "split", n+2).Add(split, count).Join("count", workflow.Join{Limit: n})
	worker := agent("worker")
	for i := range n {
		name := "b" + strconv.Itoa(i)
		g.Add(workflow.Node(workflow.Agent[string, string](worker).Named(name))).Edge("split", name).Edge(name, "count")
	}
	return workflow.Define("fan", "fans out", g.Step())
}

// BenchmarkFanOut runs a graph fan-out of FANOUT_BRANCHES (default 1,000)
// branches into a join, each branch one model call of one second, on
// SQLite; it reports the wall time of the run, the heap and goroutines a
// waiting branch holds, the journal's records, and the time a new
// runtime takes to finish the run after the first one is killed (closed
// as a crash leaves it) while every branch waits.
func BenchmarkFanOut(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("FANOUT_BRANCHES")); err == nil && v > 0 {
		n = v
	}
	var waiting atomic.Int64
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		waiting.Add(1)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "ok"}}, nil
	})
	def := fanOutGraph(n)
	ctx := context.Background()
	open := benchStores[1].open
	newRT := func(s store.Store) *swarm.Runtime {
		rt, err := swarm.New(swarm.Config{Store: s, Model: m, MaxModelCalls: -1, MaxToolCalls: -1, PollInterval: 5 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		if err := rt.Register(def); err != nil {
			b.Fatal(err)
		}
		return rt
	}
	var wall, recovery time.Duration
	var heap, goroutines, records float64
	for b.Loop() {
		// A clean run.
		s := open(b)
		rt := newRT(s)
		waiting.Store(0)
		var before, during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		t0 := time.Now()
		id, err := rt.Start(ctx, "fan", json.RawMessage(`"go"`))
		if err != nil {
			b.Fatal(err)
		}
		for waiting.Load() < int64(n) {
			time.Sleep(time.Millisecond)
		}
		runtime.ReadMemStats(&during)
		heap = float64(during.HeapInuse+during.StackInuse-before.HeapInuse-before.StackInuse) / float64(n)
		goroutines = float64(runtime.NumGoroutine()-g0) / float64(n)
		st, err := rt.Wait(ctx, id)
		if err != nil || string(st.Result) != strconv.Itoa(n) {
			b.Fatalf("%s %s %s %v", st.State, st.Reason, st.Result, err)
		}
		wall = time.Since(t0)
		recs, err := s.Read(ctx, id, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		records = float64(len(recs))
		rt.Close()

		// Killed while every branch waits, finished by a new runtime.
		s = open(b)
		a := newRT(s)
		waiting.Store(0)
		if id, err = a.Start(ctx, "fan", json.RawMessage(`"go"`)); err != nil {
			b.Fatal(err)
		}
		for waiting.Load() < int64(n) {
			time.Sleep(time.Millisecond)
		}
		a.Close()
		t1 := time.Now()
		rt = newRT(s)
		if _, err := rt.Recover(ctx); err != nil {
			b.Fatal(err)
		}
		if st, err := rt.Wait(ctx, id); err != nil || string(st.Result) != strconv.Itoa(n) {
			b.Fatalf("%s %s %s %v", st.State, st.Reason, st.Result, err)
		}
		recovery = time.Since(t1)
		rt.Close()
	}
	b.ReportMetric(wall.Seconds(), "s/run")
	b.ReportMetric(heap, "B/waiting-branch")
	b.ReportMetric(goroutines, "goroutines/branch")
	b.ReportMetric(records, "records")
	b.ReportMetric(recovery.Seconds(), "s-to-finish-after-kill")
}

// BenchmarkJoinDecision runs a diamond (a fork of two function nodes into
// a join) and a sequence of the same four nodes on the memory store: the
// difference is what a fork and its join cost (the journaled edges and
// join decisions, the branches' goroutines).
func BenchmarkJoinDecision(b *testing.B) {
	id := func(name string) workflow.Step[json.RawMessage, json.RawMessage] {
		return workflow.Node(workflow.Func(name, func(_ context.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil }))
	}
	diamond := workflow.NewGraph[int, json.RawMessage]("g", "a", 0).Add(id("a"), id("b"), id("c"), id("d")).
		Edge("a", "b").Edge("a", "c").Edge("b", "d").Edge("c", "d").Join("d", workflow.Join{})
	for _, c := range []struct {
		name string
		def  swarm.Definition
	}{
		{"diamond", workflow.Define("diamond", "forks", diamond.Step())},
		{"sequence", workflow.Define("sequence", "four in a row", chain(4))},
	} {
		b.Run(c.name, func(b *testing.B) {
			rt := benchRuntime(b, benchStores[0].open(b), nil, c.def)
			defer rt.Close()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				id, err := rt.Start(ctx, c.def.ID(), json.RawMessage(`0`))
				if err != nil {
					b.Fatal(err)
				}
				if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
					b.Fatalf("%s %s %v", st.State, st.Reason, err)
				}
			}
		})
	}
}
