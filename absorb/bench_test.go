package absorb_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store/memory"
)

// BenchmarkDelegation runs a captain that delegates once and answers, the
// delegation being an agent handoff, an absorbed text agent or an absorbed
// typed skill: absorbing adds nothing to the path of a handoff but the
// check of the arguments.
func BenchmarkDelegation(b *testing.B) {
	// Agents are absorbed once, when a program starts.
	text, typed := &swarm.Agent{Name: "c"}, &swarm.Agent{Name: "c"}
	if err := absorb.Into(text, absorb.Sibling{Agent: &swarm.Agent{Name: "sib"}}); err != nil {
		b.Fatal(err)
	}
	if err := absorb.Into(typed, absorb.Sibling{Agent: &swarm.Agent{Name: "sib"}, Skills: []absorb.Skill{{Name: "order", Input: absorb.InputOf[order]()}}}); err != nil {
		b.Fatal(err)
	}
	cases := map[string]struct {
		tool string
		args string
		spec func() swarm.Spec
	}{
		"handoff": {"handoff_to_sib", `{"request":"go"}`, func() swarm.Spec {
			return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(&swarm.Agent{Name: "sib"})}}
		}},
		"absorbed":       {"sib", `{"request":"go"}`, func() swarm.Spec { return swarm.Spec{Tools: text.Tools} }},
		"absorbed_typed": {"sib", `{"item":"tea","quantity":2}`, func() swarm.Spec { return swarm.Spec{Tools: typed.Tools} }},
	}
	for _, name := range []string{"handoff", "absorbed", "absorbed_typed"} {
		tc := cases[name]
		b.Run(name, func(b *testing.B) {
			m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				if req.Agent == "captain" && len(req.Messages) == 1 {
					return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: tc.tool, Arguments: json.RawMessage(tc.args)}}}}, nil
				}
				return &model.Response{Message: model.Message{Content: "done"}}, nil
			})
			rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			def := swarm.Define[string, string]("captain", "", func(string) swarm.Spec { return tc.spec() })
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				res, _, err := def.Run(ctx, rt, "go")
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := res.(swarm.Completed[string]); !ok {
					b.Fatalf("%#v", res)
				}
			}
		})
	}
}
