// Command memory explains how to run this example, which is a swarm.yaml
// for the swarm command rather than a Go program: `go run ./examples/memory`
// prints the commands below and exits with status 2.
package main

import (
	"fmt"
	"os"
)

const how = `examples/memory is a swarm.yaml (with script.yaml for its scripted model), run by the swarm command:

  go install ./cmd/swarm
  cd examples/memory
  swarm run --values '{"user": "alice"}' support "Book me on the Lisbon flight, aisle seat please"
  swarm run --values '{"user": "alice"}' support "Book me on the Porto flight"
  swarm memory ls user:alice

The first run writes alice's seat preference to her memory bank (user:alice, in .swarm/runs.db); the
second, a new process, finds it with memory_search: look at its first tool result on stderr.`

func main() {
	fmt.Fprintln(os.Stderr, how)
	os.Exit(2)
}
