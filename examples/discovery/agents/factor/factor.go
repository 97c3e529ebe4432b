// Package factor provides the factor agent, which factors integers into
// primes. Its skill takes a typed input: a captain that absorbs it gets a
// tool whose arguments are a Request.
package factor

import (
	"context"
	"fmt"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
)

// Request is what the factor agent is asked.
type Request struct {
	N int `json:"n" jsonschema:"the integer to factor, at least 2"`
}

func init() {
	absorb.Provide(absorb.Provider{
		ID:          "examples.discovery.factor",
		Description: "Factors integers into primes",
		Skills:      []absorb.Skill{{Name: "factor", Description: "the prime factors of n", Input: absorb.InputOf[Request]()}},
		Build:       New,
	})
}

// New makes the factor agent.
func New() *swarm.Agent {
	return &swarm.Agent{
		Name:         "factor",
		Instructions: "You factor integers with the factor_number tool. Answer with the factors only.",
		Tools: []swarm.Tool{swarm.NewTool("factor_number", "Returns the prime factors of n, smallest first.",
			func(ctx context.Context, in Request) (string, error) {
				if in.N < 2 || in.N > 1<<40 {
					return "", fmt.Errorf("n must be between 2 and 2^40, not %d", in.N)
				}
				var fs []string
				n := in.N
				for p := 2; p*p <= n; p++ {
					for n%p == 0 {
						fs = append(fs, fmt.Sprint(p))
						n /= p
					}
				}
				if n > 1 {
					fs = append(fs, fmt.Sprint(n))
				}
				return strings.Join(fs, ", "), nil
			})},
		MaxTurns: 4,
	}
}
