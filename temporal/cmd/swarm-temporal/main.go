// Command swarm-temporal is the swarm command with Temporal's engine: the
// swarms a swarm.yaml names in its temporal section (or, with
// --temporal-address, every swarm) run as Temporal workflows, and `swarm-temporal
// serve` serves them (HTTP API, dashboard, A2A, MCP) while it works as a
// Temporal worker of their task queue. Every other command and flag is the
// swarm command's; see docs/temporal.md.
package main

import (
	"os"

	icli "github.com/swarmrt/swarm/internal/cli"
)

func main() {
	os.Exit(icli.MainWith(engine(os.Stderr), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
