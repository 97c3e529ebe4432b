// Package exit provides the exit agent, which says goodbye when the user is
// done.
package exit

import (
	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
)

func init() {
	absorb.Provide(absorb.Provider{
		ID:          "examples.discovery.exit",
		Description: "Ends the session with a goodbye",
		Skills:      []absorb.Skill{{Name: "goodbye", Description: "a short farewell when the user wants to stop"}},
		Build:       New,
	})
}

// New makes the exit agent.
func New() *swarm.Agent {
	return &swarm.Agent{
		Name:         "exit",
		Instructions: "The user wants to stop. Say goodbye in one short sentence.",
		MaxTurns:     2,
	}
}
