package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The memory example, through the CLI twice: the second `swarm run` (a
// new process in all but name: it opens the file and the store anew)
// finds the preference the first one wrote, for that customer only.
func TestMemoryExample(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"swarm.yaml", "script.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "memory", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := func(rest ...string) []string {
		return append([]string{"--file", filepath.Join(dir, "swarm.yaml"), "--store", "sqlite:" + filepath.Join(dir, "runs.db")}, rest...)
	}
	run := func(user, id string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(args("run", "--id", id, "--values", `{"user": "`+user+`"}`, "support", "Book me a flight"), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("run %s: exit %d: %s", id, code, errb.String())
		}
		out.Reset()
		if code := Main(args("events", id), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("events %s: exit %d: %s", id, code, errb.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.Contains(line, `"type":"tool_result"`) && strings.Contains(line, `"tool":"memory_search"`) {
				return line
			}
		}
		t.Fatalf("run %s has no memory_search result:\n%s", id, out.String())
		return ""
	}
	if first := run("alice", "r1"); strings.Contains(first, "aisle") {
		t.Fatalf("the first run found a preference: %s", first)
	}
	if second := run("alice", "r2"); !strings.Contains(second, "Prefers an aisle seat") {
		t.Fatalf("the second run did not recall alice's preference: %s", second)
	}
	if bob := run("bob", "r3"); strings.Contains(bob, "aisle") {
		t.Fatalf("bob's run found alice's preference: %s", bob)
	}
	var out, errb bytes.Buffer
	if code := Main(args("memory", "ls", "user:alice"), strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "preferences/seat") {
		t.Fatalf("memory ls: exit %d: %s %s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := Main(args("events", "r1"), strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "12 EUR") {
		t.Fatalf("the knowledge lookup of r1: %s", out.String())
	}
}
