package main_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestForkWithEdits forks a run with two edits and no step: the answer to
// its pause and the booking tool's result are replaced, the fork is at the
// last edited step, the tool is not run again, the fork completes, and
// swarm events shows both records edited. A malformed or invalid edit is
// a usage error (exit 2) that creates nothing.
func TestForkWithEdits(t *testing.T) {
	dir := workdir(t)
	if _, code := run(t, dir, "run", "--id", "a1", "approval", "a hut"); code != 3 {
		t.Fatalf("run: exit %d, want 3 (paused)", code)
	}
	if out, code := run(t, dir, "resume", "a1", "approved"); code != 0 {
		t.Fatalf("resume: exit %d, stdout %q", code, out)
	}
	const answer, booked = "t1/tool/call_approval_0_0", "t2/tool/call_approval_1_0"
	r := swarmIn(t, dir, nil, "", "fork", "--id", "a2", "--edit", answer+"=approved, but only one night", "--edit", booked+"=booked the hut=1 night", "a1")
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"plan":"hut booked"}` {
		t.Fatalf("fork: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if n := len(lines(t, filepath.Join(dir, "effects.log"))); n != 1 {
		t.Errorf("the booking ran %d times, want 1 (the fork keeps its edited result)", n)
	}
	out, _ := run(t, dir, "events", "a2")
	edited := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Key, Output, Message string
			Edited               bool
			ForkAt               string `json:"fork_at"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("event line %q: %v", l, err)
		}
		if ev.Edited {
			edited[ev.Key] = ev.Message + ev.Output
		}
		if ev.ForkAt != "" && ev.ForkAt != booked {
			t.Errorf("fork_at %q, want %q (the last edited step)", ev.ForkAt, booked)
		}
	}
	if edited[answer] != "approved, but only one night" || edited[booked] != "booked the hut=1 night" || len(edited) != 2 {
		t.Errorf("edited records in swarm events: %v", edited)
	}
	for _, args := range [][]string{
		{"fork", "--edit", "no-equals-sign", "a1"},
		{"fork", "--edit", "t9/tool/x=y", "a1"},
		{"fork", "--edit", "t1/model=y", "a1", "start"},
	} {
		if r := swarmIn(t, dir, nil, "", args...); r.code != 2 || !strings.Contains(r.stderr, "edit") {
			t.Errorf("swarm %v: exit %d, want 2 with a message about the edit\n%s", args, r.code, r.stderr)
		}
	}
	if out, _ := run(t, dir, "ls", "--json"); strings.Count(out, `"id"`) != 2 {
		t.Errorf("runs after refused forks: %s, want a1 and a2 only", out)
	}
}
