// Command factor makes the factor agent the captain of the discovered
// agents: it factors numbers itself and delegates the rest.
//
//	go run ./examples/discovery/factor "what is the 10th Fibonacci number?"
package main

import (
	"github.com/swarmrt/swarm/examples/discovery/internal/captain"
	"github.com/swarmrt/swarm/model/scripted"

	_ "github.com/swarmrt/swarm/examples/discovery/agents/exit"
	_ "github.com/swarmrt/swarm/examples/discovery/agents/factor"
	_ "github.com/swarmrt/swarm/examples/discovery/agents/fib"
)

var script = scripted.Script{
	"factor": {
		scripted.Tools(scripted.CallTool("fib", map[string]any{"request": "the 10th Fibonacci number"})),
		scripted.Text("The 10th Fibonacci number is 55."),
	},
	"fib": {
		scripted.Tools(scripted.CallTool("fib_number", map[string]any{"n": 10})),
		scripted.Text("55"),
	},
}

func main() { captain.Run("factor", "what is the 10th Fibonacci number?", script) }
