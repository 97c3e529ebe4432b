// Package captain is what the discovery example's programs share: each
// makes a different agent the captain of the agents it discovers.
package captain

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
)

// Namespace is the namespace of the example's providers.
const Namespace = "examples.discovery"

// Run discovers the example's agents, makes the one called name the
// captain, absorbs the others into it and runs it on the command line's
// input (def when there is none), printing its answer.
func Run(name, def string, script scripted.Script) {
	ctx := context.Background()
	agents, err := absorb.Discover(Namespace)
	demo.Exit(err)
	var captain *swarm.Agent
	var siblings []absorb.Sibling
	for _, a := range agents {
		if a.Name == name {
			captain = a.Agent
		} else {
			siblings = append(siblings, a)
		}
	}
	if captain == nil {
		demo.Exit(fmt.Errorf("no agent %s was discovered", name))
	}
	captain.Instructions += " Delegate what you cannot do yourself to the other agents' tools."
	demo.Exit(absorb.Into(captain, siblings...))
	var tools []string
	for _, t := range captain.Tools {
		tools = append(tools, t.Name())
	}
	fmt.Fprintf(os.Stderr, "captain %s, tools: %s\n", name, strings.Join(tools, ", "))

	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	answer, _ := demo.Complete(ctx, rt, absorb.Captain(captain), demo.Input(def))
	fmt.Println(answer)
}
