package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMemoryAcrossProcesses runs the memory example's support agent in two
// swarm processes, one after the other, on one SQLite store: the second
// finds the customer's preference the first wrote. A third process lists
// it and a fourth deletes it.
func TestMemoryAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"swarm.yaml", "script.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "memory", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	search := func(id string) string {
		t.Helper()
		if out, code := run(t, dir, "run", "-q", "--id", id, "--values", `{"user":"ida"}`, "support", "book a flight"); code != 0 {
			t.Fatalf("run %s: exit %d: %s", id, code, out)
		}
		out, _ := run(t, dir, "events", id)
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, `"tool":"memory_search"`) && strings.Contains(l, `"type":"tool_result"`) {
				return l
			}
		}
		t.Fatalf("no memory_search result in run %s:\n%s", id, out)
		return ""
	}
	if l := search("m1"); strings.Contains(l, "aisle") {
		t.Fatalf("the first process found a preference: %s", l)
	}
	if l := search("m2"); !strings.Contains(l, "Prefers an aisle seat") {
		t.Fatalf("the second process did not recall it: %s", l)
	}
	if out, code := run(t, dir, "memory", "ls", "user:ida"); code != 0 || !strings.Contains(out, "preferences/seat") {
		t.Fatalf("memory ls: exit %d: %s", code, out)
	}
	if out, code := run(t, dir, "memory", "rm", "user:ida", "preferences/seat"); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("memory rm: exit %d: %s", code, out)
	}
	if _, code := run(t, dir, "memory", "show", "user:ida", "preferences/seat"); code != 2 {
		t.Fatalf("memory show after rm: exit %d, want 2", code)
	}
}
