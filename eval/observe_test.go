package eval_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// The calls of a run tree are observed in the order they happened: a
// child run's calls where the handoff that started it is, with their
// agents and arguments; the tree's model calls and tokens are summed.
func TestObserveRunTree(t *testing.T) {
	ctx := swarmtest.Context(t)
	tool := func(name string) swarm.Tool {
		return swarm.NewTool(name, name, func(ctx context.Context, in struct {
			ID string `json:"id"`
		}) (string, error) {
			return name + " done", nil
		})
	}
	billing := swarm.Define[string, string]("billing", "Refunds", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Refund.", Tools: []swarm.Tool{tool("refund")}}
	})
	router := swarm.Define[string, string]("router", "Routes", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Route.", Tools: []swarm.Tool{tool("lookup"), tool("notify")}, Handoffs: []swarm.Handoff{swarm.ToSwarmID("billing")}}
	})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{
		"router": {
			scripted.Tools(scripted.CallTool("lookup", map[string]any{"id": "1"})),
			scripted.Tools(scripted.CallTool("handoff_to_billing", map[string]any{"request": "refund order 1"})),
			scripted.Tools(scripted.CallTool("notify", map[string]any{"id": "1"})),
			scripted.Text("Refunded."),
		},
		"billing": {scripted.Tools(scripted.CallTool("refund", map[string]any{"id": "1"})), scripted.Text("ok")},
	}, billing, router)
	id, err := rt.Start(ctx, "router", json.RawMessage(`"refund order 1"`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := eval.Observe(ctx, rt, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range o.Calls {
		got = append(got, c.Kind+" "+c.Agent+" "+c.Name+" "+string(c.Args))
	}
	want := []string{
		`tool router lookup {"id":"1"}`,
		`handoff router billing {"request":"refund order 1"}`,
		`tool billing refund {"id":"1"}`,
		`tool router notify {"id":"1"}`,
	}
	if len(got) != len(want) {
		t.Fatalf("calls\n%q\nwant\n%q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d: %s, want %s", i, got[i], want[i])
		}
	}
	if o.Status != "completed" || o.Output != "Refunded." || o.ModelCalls != 6 || o.Tokens == 0 || o.Turns != 4 {
		t.Errorf("observed %+v", o)
	}
}
