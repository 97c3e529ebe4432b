// Command swarm is the swarm command with the three discovery agents
// linked in: `swarm agents` lists them, and a swarm.yaml run by it can
// absorb them (absorb: all, or by provider id).
//
//	go run ./examples/discovery/swarm agents
package main

// snippet main
import (
	"os"

	"github.com/swarmrt/swarm/cli"

	// The agents to provide: each package provides one in its init.
	_ "github.com/swarmrt/swarm/examples/discovery/agents/exit"
	_ "github.com/swarmrt/swarm/examples/discovery/agents/factor"
	_ "github.com/swarmrt/swarm/examples/discovery/agents/fib"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// end snippet
