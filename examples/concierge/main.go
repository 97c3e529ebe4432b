// Command concierge is a task planner with no handoffs of its own: it finds
// the swarms it needs in the registry at run time and hands off to what its
// search returned.
//
//	go run ./examples/concierge "two tickets for Friday's concert, and a refund for last week's"
package main

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
)

var (
	ticketing = swarm.Define[string, string]("ticketing", "Buys tickets for concerts, plays and matches",
		func(string) swarm.Spec { return swarm.Spec{Instructions: "Buy the tickets: {{.Input}}"} }).WithTags("events", "booking")
	refunds = swarm.Define[string, string]("refunds", "Refunds payments and settles billing disputes",
		func(string) swarm.Spec { return swarm.Spec{Instructions: "Refund: {{.Input}}"} }).WithTags("billing")
	weather = swarm.Define[string, string]("forecast", "Forecasts the weather for a place and day",
		func(string) swarm.Spec { return swarm.Spec{Instructions: "Forecast: {{.Input}}"} }).WithTags("weather")
	concierge = swarm.Define[string, string]("concierge", "Does anything asked by finding the right swarm in the registry",
		func(string) swarm.Spec {
			return swarm.Spec{
				Instructions: "Split the request into tasks. For each, search the registry, hand the task to the best swarm found, and finally summarise the results.",
				Registry:     &swarm.RegistryAccess{},
				MaxTurns:     6,
			}
		})
)

var script = scripted.Script{
	"concierge": {
		scripted.Tools(
			scripted.CallTool("swarm_registry_search", map[string]any{"query": "buy concert tickets"}),
			scripted.CallTool("swarm_registry_search", map[string]any{"query": "refund a payment"}),
		),
		scripted.Tools(
			scripted.CallTool("swarm_registry_handoff", map[string]any{"swarm_id": "ticketing", "request": "two tickets for Friday's concert"}),
			scripted.CallTool("swarm_registry_handoff", map[string]any{"swarm_id": "refunds", "request": "refund last week's concert tickets"}),
		),
		scripted.Text("Two tickets for Friday are booked (confirmation C-2F), and last week's 80 EUR is being refunded."),
	},
	"ticketing": {scripted.Text("Booked 2 seats for Friday, confirmation C-2F.")},
	"refunds":   {scripted.Text("Refund of 80 EUR issued.")},
}

func main() {
	ctx := context.Background()
	request := demo.Input("two tickets for Friday's concert, and a refund for last week's")
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	demo.Exit(rt.Register(ticketing, refunds, weather))
	answer, _ := demo.Complete(ctx, rt, concierge, request)
	fmt.Println(answer)
}
