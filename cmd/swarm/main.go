// Command swarm runs, inspects, resumes, stops and recovers swarm runs.
//
// See the README for the command reference; `swarm help` lists the commands.
// A program that links agent packages can be a swarm command of its own
// that lists and absorbs their agents: see package
// github.com/swarmrt/swarm/cli.
package main

import (
	"os"

	"github.com/swarmrt/swarm/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
