// Command fib makes the fib agent the captain of the discovered agents:
// it computes Fibonacci numbers itself and delegates the rest.
//
//	go run ./examples/discovery/fib "factor 30"
//
// Which program runs picks the captain: ../factor and ../exit link the same
// three agent packages and make another of them the captain.
package main

import (
	"github.com/swarmrt/swarm/examples/discovery/internal/captain"
	"github.com/swarmrt/swarm/model/scripted"

	// The agents to discover: each package provides one in its init.
	_ "github.com/swarmrt/swarm/examples/discovery/agents/exit"
	_ "github.com/swarmrt/swarm/examples/discovery/agents/factor"
	_ "github.com/swarmrt/swarm/examples/discovery/agents/fib"
)

var script = scripted.Script{
	"fib": {
		scripted.Tools(scripted.CallTool("factor", map[string]any{"n": 30})),
		scripted.Text("The prime factors of 30 are 2 × 3 × 5."),
	},
	"factor": {
		scripted.Tools(scripted.CallTool("factor_number", map[string]any{"n": 30})),
		scripted.Text("2, 3, 5"),
	},
}

func main() { captain.Run("fib", "factor 30", script) }
