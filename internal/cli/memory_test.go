package cli

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/sqlite"
)

// swarm memory lists banks and entries, shows one and deletes entries and
// banks, on a SQLite store another process wrote.
func TestMemoryCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "swarm.db")
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ bank, key, text string }{
		{"user:alice", "preferences/seat", "Prefers an aisle seat"},
		{"user:alice", "preferences/meal", "Vegetarian"},
		{"user:bob", "preferences/seat", "Window"},
	} {
		if _, _, err := st.PutMemory(t.Context(), w.bank, store.MemoryWrite{Entry: store.MemoryEntry{Key: w.key, Text: w.text}}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(append([]string{"--store", "sqlite:" + path, "memory"}, args...), strings.NewReader(""), &out, &errOut); code != want {
			t.Fatalf("swarm memory %q: exit %d, want %d: %s", args, code, want, errOut.String())
		}
		return out.String(), errOut.String()
	}
	out, _ := run(0, "banks")
	if !strings.Contains(out, "user:alice") || !strings.Contains(out, "user:bob") || !regexpMatch(`user:alice\s+2\s`, out) {
		t.Fatalf("banks:\n%s", out)
	}
	out, _ = run(0, "ls", "user:alice")
	if !strings.Contains(out, "preferences/meal") || !strings.Contains(out, "Prefers an aisle seat") || strings.Contains(out, "Window") {
		t.Fatalf("ls:\n%s", out)
	}
	out, _ = run(0, "show", "user:alice", "preferences/seat")
	if out != "Prefers an aisle seat\n" {
		t.Fatalf("show = %q", out)
	}
	_, errOut := run(2, "show", "user:alice", "nothing")
	if !strings.Contains(errOut, "no entry") {
		t.Fatalf("show of a missing key: %s", errOut)
	}
	run(2, "ls", "bad bank")
	run(2, "rm", "user:alice")
	out, _ = run(0, "rm", "user:alice", "preferences/seat")
	if !strings.Contains(out, "deleted preferences/seat") {
		t.Fatalf("rm: %s", out)
	}
	_, errOut = run(2, "rm", "user:alice", "preferences/seat")
	if !strings.Contains(errOut, "no entry") {
		t.Fatalf("rm again: %s", errOut)
	}
	out, _ = run(0, "ls", "user:alice", "--json")
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `"key":"preferences/meal"`) {
		t.Fatalf("ls --json after rm:\n%s", out)
	}
	out, _ = run(0, "rm", "--bank", "user:bob")
	if !strings.Contains(out, "deleted memory bank user:bob (1 entries)") {
		t.Fatalf("rm --bank: %s", out)
	}
	if out, _ = run(0, "banks"); strings.Contains(out, "user:bob") {
		t.Fatalf("banks after rm --bank:\n%s", out)
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
