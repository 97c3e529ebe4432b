// Command support triages a customer message to one of two child swarms,
// refunds or technical support. Both handoffs are customizable: the triage
// model tailors the child it calls with extra instructions and a registered
// tool, without being able to remove anything the child already has.
//
//	go run ./examples/support "I was charged twice for my order 1234"
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
)

type orderRef struct {
	Order string `json:"order" jsonschema:"the order number"`
}

var (
	lookupOrder = swarm.NewTool("lookup_order", "Looks up an order's payments",
		func(ctx context.Context, in orderRef) (string, error) {
			return "order " + in.Order + ": two card payments of 59 EUR on 2026-11-19", nil
		})
	issueRefund = swarm.NewTool("issue_refund", "Refunds one payment of an order",
		func(ctx context.Context, in orderRef) (string, error) {
			return "refund of 59 EUR issued for order " + in.Order, nil
		})
	refunds = swarm.Define[string, string]("refunds", "Handles refunds and billing disputes",
		func(string) swarm.Spec {
			return swarm.Spec{Instructions: "Resolve the billing problem: {{.Input}}", Tools: []swarm.Tool{issueRefund}}
		}).WithTags("billing")
	tech = swarm.Define[string, string]("tech_support", "Solves technical problems with the product",
		func(string) swarm.Spec { return swarm.Spec{Instructions: "Solve: {{.Input}}"} }).WithTags("technical")
	support = swarm.Define[string, string]("support", "Answers customer messages",
		func(string) swarm.Spec {
			return swarm.Spec{
				Instructions: "Send the customer's message to the right team, customizing it with what it needs, and reply with its answer.",
				Handoffs:     []swarm.Handoff{swarm.ToSwarm(refunds).Customizable(), swarm.ToSwarm(tech).Customizable()},
			}
		})
)

var script = scripted.Script{
	"support": {
		scripted.Tools(scripted.CallTool("handoff_to_refunds", map[string]any{
			"request": "Customer was charged twice for order 1234.",
			"customization": map[string]any{
				"additional_instructions": "Check the order's payments before refunding anything.",
				"additional_tools":        []string{"lookup_order"},
			},
		})),
		scripted.Text("We found the double charge on order 1234 and refunded 59 EUR; it will reach your card in 3-5 days."),
	},
	"refunds": {
		scripted.Tools(scripted.CallTool("lookup_order", map[string]any{"order": "1234"})),
		scripted.Tools(scripted.CallTool("issue_refund", map[string]any{"order": "1234"})),
		scripted.Text("Refunded one of the two 59 EUR payments of order 1234."),
	},
}

func main() {
	ctx := context.Background()
	request := demo.Input("I was charged twice for my order 1234")
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	// Tools a customization may name must be registered.
	demo.Exit(rt.RegisterTool(lookupOrder))
	answer, id := demo.Complete(ctx, rt, support, request)
	kids, err := rt.List(ctx, store.Filter{Parent: id})
	demo.Exit(err)
	for _, k := range kids {
		st, err := rt.Status(ctx, k.ID)
		demo.Exit(err)
		if st.Customization != nil {
			fmt.Fprintf(os.Stderr, "  %s was customized: %q, tools %v\n", k.Swarm, st.Customization.AdditionalInstructions, st.Customization.AdditionalTools)
		}
	}
	fmt.Println(answer)
}
