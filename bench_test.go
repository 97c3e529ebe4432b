package swarm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/sqlite"
)

type echoIn struct {
	N int `json:"n"`
}

// benchRounds measures rounds of runs of ten rounds each; a round is a
// model response with one tool call, the tool's result and the turn's end,
// all journaled. Run creation and completion are included, spread over the
// rounds.
func benchRounds(b *testing.B, st store.Store) {
	benchRoundsWith(b, swarm.Config{Store: st}, nil)
}

// benchRoundsWith is benchRounds with a runtime of cfg (its Model set
// here); after, if set, runs after each run, outside the timing.
func benchRoundsWith(b *testing.B, cfg swarm.Config, after func()) {
	const perRun = 10
	echo := swarm.NewTool("echo", "echoes", func(_ context.Context, in echoIn) (int, error) { return in.N, nil })
	steps := make([]scripted.Step, 0, perRun)
	for i := range perRun - 1 {
		steps = append(steps, scripted.Tools(scripted.CallTool("echo", map[string]any{"n": i})))
	}
	steps = append(steps, scripted.Text("done"))
	cfg.Model = scripted.New(scripted.Script{"bench": steps}, scripted.WithoutBookkeeping())
	rt, err := swarm.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	def := swarm.Define[string, string]("bench", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{echo}, MaxTurns: perRun}
	})
	if err := rt.Register(def); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += perRun {
		res, _, err := def.Run(ctx, rt, "go")
		if err != nil {
			b.Fatal(err)
		}
		if res.State() != swarm.StateCompleted {
			b.Fatalf("state %v", res)
		}
		if after != nil {
			b.StopTimer()
			after()
			b.StartTimer()
		}
	}
}

// BenchmarkRound measures the framework's overhead per orchestration round
// (scripted model, so no model latency).
func BenchmarkRound(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchRounds(b, memory.New()) })
	b.Run("sqlite", func(b *testing.B) {
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		benchRounds(b, st)
	})
}

// BenchmarkConcurrentRuns starts 10,000 runs whose model answers after one
// second and waits for all of them; it reports the wall time and the heap
// held per waiting run.
func BenchmarkConcurrentRuns(b *testing.B) {
	const runs = 10000
	for _, name := range []string{"memory", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				var st store.Store = memory.New()
				if name == "sqlite" {
					s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "c.db"))
					if err != nil {
						b.Fatal(err)
					}
					st = s
				}
				m := scripted.New(scripted.Script{"wait": {{Text: "done", Delay: time.Second}}}, scripted.WithoutBookkeeping())
				rt, err := swarm.New(swarm.Config{Store: st, Model: m, PollInterval: time.Second})
				if err != nil {
					b.Fatal(err)
				}
				def := swarm.Define[string, string]("wait", "", nil)
				if err := rt.Register(def); err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				runtime.GC()
				var before, during runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				ids := make([]string, runs)
				var wg sync.WaitGroup
				errs := make(chan error, runs)
				for i := range runs {
					wg.Go(func() {
						id, err := rt.Start(ctx, "wait", []byte(`"x"`))
						if err != nil {
							errs <- err
							return
						}
						ids[i] = id
					})
				}
				wg.Wait()
				started := time.Since(start)
				time.Sleep(time.Second/2 - started/2)
				runtime.ReadMemStats(&during)
				for _, id := range ids {
					if id == "" {
						continue
					}
					wg.Go(func() {
						s, err := rt.Wait(ctx, id)
						if err == nil && s.State != swarm.StateCompleted {
							err = fmt.Errorf("run %s: %s %s", id, s.State, s.Reason)
						}
						if err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				wall := time.Since(start)
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				b.ReportMetric(float64(wall.Milliseconds()), "wall-ms")
				b.ReportMetric(float64(started.Milliseconds()), "start-ms")
				b.ReportMetric(float64(during.HeapAlloc-before.HeapAlloc)/runs/1024, "heap-KB/run")
				b.ReportMetric(float64(during.StackInuse-before.StackInuse)/runs/1024, "stack-KB/run")
				rt.Close()
				st.Close()
			}
		})
	}
}
