// Package cli is the swarm command as a library, so that a program can be
// its own swarm binary: the agents its packages provide (absorb.Provide)
// are then the ones `swarm agents` lists and a swarm.yaml can absorb. The
// swarm command built from this module links no agent packages; a
// program that blank-imports its provider packages and calls [Main] does.
//
//	package main
//
//	import (
//		"os"
//
//		"github.com/swarmrt/swarm/cli"
//
//		_ "example.com/acme/agents/coder" // provides acme.coder in its init
//	)
//
//	func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
package cli

import (
	"io"

	icli "github.com/swarmrt/swarm/internal/cli"
)

// Main runs the swarm command with args (without the program name), as
// the swarm binary does, and returns the process exit code; see the README
// for the commands and `swarm help`. It stops at SIGINT or SIGTERM as the
// binary does.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return icli.Main(args, stdin, stdout, stderr)
}
