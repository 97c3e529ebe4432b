package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The swarm command does not include Temporal's engine: a file whose
// swarms run on Temporal is refused, naming the command that runs it, and
// no store is created.
func TestTemporalFileRefused(t *testing.T) {
	dir := t.TempDir()
	file := "version: 1\ntemporal: {address: localhost:7233}\nswarms:\n  trip: {instructions: Plan.}\n"
	if err := os.WriteFile(filepath.Join(dir, "swarm.yaml"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run", "trip", "x"}, {"serve", "--addr", "127.0.0.1:0"}} {
		cmd := swarmCmd(context.Background(), dir, args...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "swarm.yaml has a temporal section") || !strings.Contains(string(out), "swarm-temporal") {
			t.Errorf("swarm %v: exit %d, %s", args, cmd.ProcessState.ExitCode(), out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs.db")); err == nil {
		t.Error("the refused command created the store")
	}
}
