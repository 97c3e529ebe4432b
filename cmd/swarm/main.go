// Command swarm runs, inspects, resumes, stops and recovers swarm runs.
//
// See the README for the command reference; `swarm help` lists the commands.
package main

import (
	"os"

	"github.com/swarmrt/swarm/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
