package main_test

import (
	"strings"
	"testing"
)

// TestRmDeletesFinishedRuns: swarm rm deletes finished runs with their
// child runs, refuses (exit 2, saying why) a paused run, a child run on its
// own and an unknown id while still deleting the others, and --finished-
// before expires the finished runs older than its age.
func TestRmDeletesFinishedRuns(t *testing.T) {
	dir := workdir(t)
	if r := swarmIn(t, dir, nil, "", "run", "-q", "--id", "t", "tour", "x"); r.code != 0 {
		t.Fatalf("run tour: exit %d\n%s", r.code, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "run", "-q", "--id", "p", "approval", "x"); r.code != 3 {
		t.Fatalf("run approval: exit %d, want 3 (paused)\n%s", r.code, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "run", "-q", "--id", "done", "trip", "two"); r.code != 0 {
		t.Fatalf("run trip: exit %d\n%s", r.code, r.stderr)
	}
	var child string
	for _, row := range strings.Split(strings.TrimSpace(swarmIn(t, dir, nil, "", "ls", "--all").stdout), "\n")[1:] {
		if f := strings.Fields(row); len(f) > 5 && f[5] == "t" {
			child = f[0]
		}
	}
	if child == "" {
		t.Fatal("tour started no child run")
	}

	r := swarmIn(t, dir, nil, "", "rm", "p", child)
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, `run "p" is paused`) || !strings.Contains(r.stderr, "stop it first") ||
		!strings.Contains(r.stderr, `is a child of run "t"`) {
		t.Fatalf("rm of a paused run and a child: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	r = swarmIn(t, dir, nil, "", "rm", "t", "nope")
	if r.code != 2 || !strings.Contains(r.stdout, "deleted run t and 2 runs below it") || !strings.Contains(r.stderr, `no run "nope"`) {
		t.Fatalf("rm t nope: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "status", child); r.code != 2 {
		t.Errorf("status of a deleted child run: exit %d\n%s", r.code, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "status", "p"); r.code != 3 && r.code != 0 || !strings.Contains(r.stdout, "paused") {
		t.Errorf("the refused run after rm: exit %d %s", r.code, r.stdout)
	}

	for _, args := range [][]string{{"rm"}, {"rm", "--finished-before", "1h", "done"}, {"rm", "--finished-before", "-1h"}} {
		if r := swarmIn(t, dir, nil, "", args...); r.code != 2 || r.stderr == "" {
			t.Errorf("swarm %v: exit %d %s", args, r.code, r.stderr)
		}
	}
	if r := swarmIn(t, dir, nil, "", "rm", "--finished-before", "1h"); r.code != 0 || !strings.Contains(r.stdout, "deleted 0 runs") {
		t.Errorf("rm --finished-before 1h: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "stop", "p", "no longer needed"); r.code != 0 {
		t.Fatalf("stop: exit %d\n%s", r.code, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "rm", "--finished-before", "0s"); r.code != 0 || !strings.Contains(r.stdout, "deleted 2 runs") {
		t.Errorf("rm --finished-before 0s: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "ls", "--all", "--json"); r.code != 0 || strings.Contains(r.stdout, `"id"`) {
		t.Errorf("runs left after expiry: exit %d %s", r.code, r.stdout)
	}
}
