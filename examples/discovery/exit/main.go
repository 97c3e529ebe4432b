// Command exit makes the exit agent the captain of the discovered agents.
//
//	go run ./examples/discovery/exit "factor 12, then I'm done"
package main

import (
	"github.com/swarmrt/swarm/examples/discovery/internal/captain"
	"github.com/swarmrt/swarm/model/scripted"

	_ "github.com/swarmrt/swarm/examples/discovery/agents/exit"
	_ "github.com/swarmrt/swarm/examples/discovery/agents/factor"
	_ "github.com/swarmrt/swarm/examples/discovery/agents/fib"
)

var script = scripted.Script{
	"exit": {
		scripted.Tools(scripted.CallTool("factor", map[string]any{"n": 12})),
		scripted.Text("12 = 2 × 2 × 3. Goodbye!"),
	},
	"factor": {
		scripted.Tools(scripted.CallTool("factor_number", map[string]any{"n": 12})),
		scripted.Text("2, 2, 3"),
	},
}

func main() { captain.Run("exit", "factor 12, then I'm done", script) }
