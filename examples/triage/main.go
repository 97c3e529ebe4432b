// Command triage routes a request to the agent that speaks its language; the
// swarm needs no triage agent of its own.
//
//	go run ./examples/triage "¿Dónde está la estación de tren?"
package main

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
)

var (
	spanish = &swarm.Agent{Name: "spanish", Description: "Answers requests written in Spanish", Instructions: "Responde siempre en español."}
	english = &swarm.Agent{Name: "english", Description: "Answers requests written in English", Instructions: "Always answer in English."}
	triage  = swarm.Define[string, string]("triage", "Routes a request by its language",
		func(string) swarm.Spec {
			return swarm.Spec{
				Instructions: "Hand off to the appropriate agent based on the language of the request, and reply with its answer.",
				Handoffs:     []swarm.Handoff{swarm.ToAgent(spanish), swarm.ToAgent(english)},
				MaxTurns:     3,
			}
		})
)

var script = scripted.Script{
	"triage": {
		scripted.Tools(scripted.CallTool("handoff_to_spanish", map[string]any{"request": "¿Dónde está la estación de tren?"})),
		scripted.Text("La estación de tren está a dos calles, junto a la plaza mayor."),
	},
	"spanish": {scripted.Text("La estación de tren está a dos calles, junto a la plaza mayor.")},
}

func main() {
	ctx := context.Background()
	request := demo.Input("¿Dónde está la estación de tren?")
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	answer, _ := demo.Complete(ctx, rt, triage, request)
	fmt.Println(answer)
}
