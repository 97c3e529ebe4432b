package swarm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// BenchmarkParallelHandoffs measures a round of three handoffs (two agents
// and a child swarm) requested in one response, each answering after 200ms
// of scripted model latency. It reports the round's time as a ratio of one
// handoff's latency: 1.0 is perfect overlap, 3.0 sequential execution.
func BenchmarkParallelHandoffs(b *testing.B) {
	const latency = 200 * time.Millisecond
	slow := func(text string) []scripted.Step { return []scripted.Step{{Text: text, Delay: latency}} }
	script := scripted.Script{
		"fan": {scripted.Tools(
			scripted.CallTool("handoff_to_a", map[string]any{"request": "x"}),
			scripted.CallTool("handoff_to_b", map[string]any{"request": "y"}),
			scripted.CallTool("handoff_to_leaf", map[string]any{"request": "z"}),
		), scripted.Text("done")},
		"a":    slow("a"),
		"b":    slow("b"),
		"leaf": slow("leaf"),
	}
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(script, scripted.WithoutBookkeeping())})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	leaf := swarm.Define[string, string]("leaf", "a child swarm", nil)
	fan := swarm.Define[string, string]("fan", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{
			swarm.ToAgent(&swarm.Agent{Name: "a"}), swarm.ToAgent(&swarm.Agent{Name: "b"}), swarm.ToSwarm(leaf),
		}}
	})
	ctx := context.Background()
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, _, err := fan.Run(ctx, rt, "go")
		if err != nil || res.State() != swarm.StateCompleted {
			b.Fatalf("%v %v", res, err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total)/float64(b.N)/float64(latency), "x_latency")
}

// BenchmarkChildFanOut starts one parent whose single response hands off to
// N child swarms at once and reports child runs completed per second.
func BenchmarkChildFanOut(b *testing.B) {
	for _, n := range []int{1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			calls := make([]scripted.ToolCall, n)
			for i := range calls {
				calls[i] = scripted.CallTool("handoff_to_leaf", map[string]any{"request": fmt.Sprint("task ", i)})
			}
			script := scripted.Script{
				"fan":  {scripted.Tools(calls...), scripted.Text("done")},
				"leaf": {scripted.Text("ok")},
			}
			rt, err := swarm.New(swarm.Config{Store: memory.New(), MaxParallel: n,
				Model: scripted.New(script, scripted.WithoutBookkeeping(), scripted.WithoutDelays())})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			leaf := swarm.Define[string, string]("leaf", "a child swarm", nil)
			fan := swarm.Define[string, string]("fan", "", func(string) swarm.Spec {
				return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(leaf)}}
			})
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				res, _, err := fan.Run(ctx, rt, "go")
				if err != nil || res.State() != swarm.StateCompleted {
					b.Fatalf("%v %v", res, err)
				}
			}
			b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "children/s")
		})
	}
}
