package eval_test

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// An eval set runs against a swarm as a durable eval run; its report
// holds each case's scores.
func ExampleRun() {
	ctx := context.Background()
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{
		"support": {
			scripted.Tools(scripted.CallTool("lookup_order", map[string]any{"id": "42"})),
			scripted.Text("Order 42 has shipped."),
		},
	})})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	lookup := swarm.NewTool("lookup_order", "Finds an order", func(ctx context.Context, in struct {
		ID string `json:"id"`
	}) (string, error) {
		return "order " + in.ID + ": shipped", nil
	})
	if err := rt.Register(swarm.Define[string, string]("support", "Answers customers", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Help the customer.", Tools: []swarm.Tool{lookup}}
	})); err != nil {
		panic(err)
	}
	if err := eval.Define(rt, eval.Options{}); err != nil {
		panic(err)
	}
	set, err := eval.Parse([]byte(`
name: support
swarm: support
cases:
  - id: where-is-my-order
    input: Where is order 42?
    expect:
      output: {contains: [shipped]}
      trajectory:
        calls: [{name: lookup_order, args: {id: "42"}}]
      bounds: {model_calls: 2, duration: 1m}
  - id: refund
    input: I want a refund
    expect:
      output: {contains: [refund]}
`), "support.yaml")
	if err != nil {
		panic(err)
	}
	rep, err := eval.Run(ctx, rt, set, eval.RunOptions{Config: "v1"})
	if err != nil {
		panic(err)
	}
	for _, c := range rep.Cases {
		fmt.Println(c.Case, c.Pass)
	}
	fmt.Printf("%d passed, %d failed: pass %v\n", rep.Passed, rep.Failed, rep.Pass)
	// Output:
	// where-is-my-order true
	// refund false
	// 1 passed, 1 failed: pass false
}

// Compare tells whether a change is better beyond noise: here one case
// fixed, none broken, which the exact McNemar test does not call
// significant.
func ExampleCompare() {
	base := &eval.Report{Config: "v1", Cases: []eval.CaseResult{
		{Case: "a", Pass: true, Observed: eval.Observed{Output: "Shipped."}},
		{Case: "b", Pass: false, Observed: eval.Observed{Output: "No idea."}},
	}}
	other := &eval.Report{Config: "v2", Cases: []eval.CaseResult{
		{Case: "a", Pass: true, Observed: eval.Observed{Output: "Shipped."}},
		{Case: "b", Pass: true, Observed: eval.Observed{Output: "Refunded."}},
	}}
	c := eval.Compare(base, other)
	fmt.Println(c.Verdict)
	fmt.Println(c.Cases[1].Diff)
	// Output:
	// no significant change: pass rate 50% -> 100% (1 fixed, 0 broken, McNemar p=1)
	// output:
	// - No idea.
	// + Refunded.
}
