package absorb_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// A package provides an agent in its init function; a program discovers
// the provided agents, picks its captain and absorbs the others as tools.
func ExampleInto() {
	// In the factor package: func init() { absorb.Provide(...) }
	type number struct {
		N int `json:"n"`
	}
	absorb.Provide(absorb.Provider{
		ID:          "example.factor",
		Description: "Factors integers",
		Skills:      []absorb.Skill{{Name: "factor", Description: "the prime factors of n", Input: absorb.InputOf[number]()}},
		Build:       func() *swarm.Agent { return &swarm.Agent{Instructions: "Factor n."} },
	})
	absorb.Provide(absorb.Provider{
		ID:          "example.fib",
		Description: "Fibonacci numbers",
		Build:       func() *swarm.Agent { return &swarm.Agent{Instructions: "You route requests."} },
	})

	// In the program: every provided agent but the captain is absorbed.
	agents, err := absorb.Discover("example")
	if err != nil {
		fmt.Println(err)
		return
	}
	captain := agents[1] // fib, in provider id order
	if err := absorb.Into(captain.Agent, agents[0]); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(captain.Tools[0].Name(), string(captain.Tools[0].Schema()))

	m := scripted.New(scripted.Script{
		"fib":    {scripted.Tools(scripted.CallTool("factor", map[string]any{"n": 30})), scripted.Text("2 × 3 × 5")},
		"factor": {scripted.Text("2, 3, 5")},
	})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, _, err := absorb.Captain(captain.Agent).Run(ctx, rt, "factor 30")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.(swarm.Completed[string]).Output)
	// Output:
	// factor {"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}
	// 2 × 3 × 5
}
