package scripted_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
)

// BenchmarkGenerate serves a three-step script (tool call, text, text) to
// 10,000 runs from parallel goroutines, the way a load test drives the
// runtime: always the tool call step, always a text step, or each run
// walking through the script.
func BenchmarkGenerate(b *testing.B) {
	script := scripted.Script{"planner": {
		scripted.Tools(scripted.CallTool("handoff_to_weather", map[string]string{"request": "weekend forecast"})),
		scripted.Text("Sunny, 22C, light winds from the west"),
		scripted.Text(`{"activity": "hiking"}`),
	}}
	const runs = 10000
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = "run-" + strconv.Itoa(i)
	}
	msgs := []model.Message{{Role: model.RoleUser, Content: "What should I do this weekend?"}}
	for _, bc := range []struct {
		name string
		call int
		opts []scripted.Option
	}{
		{"tool_calls", 0, nil},
		{"text", 1, nil},
		{"mixed", -1, nil},
		{"mixed/no-bookkeeping", -1, []scripted.Option{scripted.WithoutBookkeeping()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := scripted.New(script, bc.opts...)
			var next atomic.Int64
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := &model.Request{Agent: "planner", System: "You plan weekends.", Messages: msgs, Call: bc.call}
				for pb.Next() {
					n := int(next.Add(1))
					req.RunID = ids[n%runs]
					if bc.call < 0 {
						req.Call = (n / runs) % 3
					}
					if _, err := m.Generate(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
