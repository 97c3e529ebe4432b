// Package fib provides the fib agent, which computes Fibonacci numbers.
// Importing the package (a blank import is enough) makes the agent
// discoverable with absorb.Discover.
package fib

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
)

func init() {
	absorb.Provide(absorb.Provider{
		ID:          "examples.discovery.fib",
		Description: "Computes Fibonacci numbers",
		Skills:      []absorb.Skill{{Name: "fibonacci", Description: "the n-th Fibonacci number, asked in words"}},
		Build:       New,
	})
}

type number struct {
	N int `json:"n" jsonschema:"which Fibonacci number, from 0 to 90"`
}

// New makes the fib agent.
func New() *swarm.Agent {
	return &swarm.Agent{
		Name:         "fib",
		Instructions: "You compute Fibonacci numbers with the fib_number tool. Answer with the number only.",
		Tools: []swarm.Tool{swarm.NewTool("fib_number", "Returns the n-th Fibonacci number (F0 = 0, F1 = 1).",
			func(ctx context.Context, in number) (string, error) {
				if in.N < 0 || in.N > 90 {
					return "", fmt.Errorf("n must be between 0 and 90, not %d", in.N)
				}
				a, b := 0, 1
				for range in.N {
					a, b = b, a+b
				}
				return fmt.Sprint(a), nil
			})},
		MaxTurns: 4,
	}
}
