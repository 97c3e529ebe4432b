// Command booking plans an activity and hands the ticket purchase to a
// separate ticketing swarm: the purchase runs as a child run of its own,
// with a typed input and result, and its confirmation comes back to the
// planner as the handoff's result.
//
//	go run ./examples/booking "a jazz evening for two"
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
)

// Order is what the ticketing swarm takes.
type Order struct {
	Event string `json:"event" jsonschema:"the event to book"`
	Seats int    `json:"seats" jsonschema:"how many seats"`
}

// Tickets is what it returns.
type Tickets struct {
	Confirmation string `json:"confirmation"`
	Total        string `json:"total"`
}

// Plan is the booking swarm's result.
type Plan struct {
	Activity     string `json:"activity"`
	Confirmation string `json:"confirmation"`
}

var (
	reserve = swarm.NewTool("reserve_seats", "Reserves seats for an event and returns a confirmation code",
		func(ctx context.Context, o Order) (Tickets, error) {
			return Tickets{Confirmation: fmt.Sprintf("TK-%d-%s", o.Seats, strings.ToUpper(o.Event[:3])), Total: fmt.Sprintf("%d EUR", 45*o.Seats)}, nil
		})
	ticketing = swarm.Define[Order, Tickets]("ticketing", "Buys tickets for an event",
		func(o Order) swarm.Spec {
			return swarm.Spec{Instructions: "Reserve {{.Input.seats}} seats for {{.Input.event}} and report the confirmation.", Tools: []swarm.Tool{reserve}}
		})
	booking = swarm.Define[string, Plan]("booking", "Plans an activity and books it",
		func(string) swarm.Spec {
			return swarm.Spec{
				Instructions: "Pick an activity for: {{.Input}}. Book it through the ticketing swarm, then complete with the plan.",
				Handoffs:     []swarm.Handoff{swarm.ToSwarm(ticketing)},
			}
		})
)

var script = scripted.Script{
	"booking": {
		scripted.Tools(scripted.CallTool("handoff_to_ticketing", map[string]any{"input": map[string]any{"event": "jazz at the Blue Note", "seats": 2}})),
		scripted.Text(`{"activity": "Jazz at the Blue Note, Friday 21:00", "confirmation": "TK-2-JAZ"}`),
	},
	"ticketing": {
		scripted.Tools(scripted.CallTool("reserve_seats", map[string]any{"event": "jazz at the Blue Note", "seats": 2})),
		scripted.Text(`{"confirmation": "TK-2-JAZ", "total": "90 EUR"}`),
	},
}

func main() {
	ctx := context.Background()
	request := demo.Input("a jazz evening for two")
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	plan, id := demo.Complete(ctx, rt, booking, request)
	kids, err := rt.List(ctx, store.Filter{Parent: id})
	demo.Exit(err)
	for _, k := range kids {
		fmt.Fprintf(os.Stderr, "  child run %s (%s): %s %s\n", k.ID, k.Swarm, k.State, k.Result)
	}
	fmt.Printf("%s — confirmation %s\n", plan.Activity, plan.Confirmation)
}
