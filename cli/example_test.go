package cli_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/cli"
)

// A package that provides an agent; a program blank-imports it.
func init() {
	absorb.Provide(absorb.Provider{
		ID:          "acme.greeter",
		Description: "Greets people",
		Skills:      []absorb.Skill{{Name: "greet", Description: "says hello"}},
		Build:       func() *swarm.Agent { return &swarm.Agent{Instructions: "Greet."} },
	})
}

// A program that links an agent package and runs the swarm command: its
// `swarm agents` lists the provided agent, and a swarm.yaml it runs can
// absorb it.
func Example() {
	code := cli.Main([]string{"agents"}, strings.NewReader(""), os.Stdout, os.Stderr)
	fmt.Println("exit code", code)
	// Output:
	// greeter (provided by acme.greeter): Greets people
	//   skill greet: says hello
	//     input: text
	// exit code 0
}
