package main_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// teamDir is a copy of examples/team.
func teamDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "examples", "team"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRunIDMistakesExitTwo: a taken --id and a malformed one are usage
// errors (exit 2) that name the id, not the definitions file.
func TestRunIDMistakesExitTwo(t *testing.T) {
	dir := workdir(t)
	if r := swarmIn(t, dir, nil, "", "run", "-q", "--id", "a", "trip", "x"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := swarmIn(t, dir, nil, "", "run", "--id", "a", "approval", "x")
	if r.code != 2 || !strings.Contains(r.stderr, "--id a is taken") {
		t.Errorf("taken id: exit %d\n%s", r.code, r.stderr)
	}
	r = swarmIn(t, dir, nil, "", "run", "--id", "two words", "trip", "x")
	if r.code != 2 || !strings.Contains(r.stderr, `--id "two words"`) || strings.Contains(r.stderr, "swarm.yaml") {
		t.Errorf("bad id: exit %d\n%s", r.code, r.stderr)
	}
}

// TestResumeAtAPauseThatNeverWas: resume --pause P, P no pause of the
// run, says there is no such pause rather than that it was answered.
func TestResumeAtAPauseThatNeverWas(t *testing.T) {
	dir := workdir(t)
	if r := swarmIn(t, dir, nil, "", "run", "-q", "--id", "p", "approval", "x"); r.code != 3 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	for _, pause := range []string{"99", "2"} {
		r := swarmIn(t, dir, nil, "", "resume", "--pause", pause, "p", "yes")
		if r.code != 2 || !strings.Contains(r.stderr, "has no pause "+pause) || strings.Contains(r.stderr, "answered") {
			t.Errorf("resume --pause %s: exit %d\n%s", pause, r.code, r.stderr)
		}
	}
	if r := swarmIn(t, dir, nil, "", "stop", "p", "done"); r.code != 0 {
		t.Errorf("stop: exit %d\n%s", r.code, r.stderr)
	}
}

// TestRunOfATeamPointsToSwarmTeam: swarm run TEAM says to use swarm team.
func TestRunOfATeamPointsToSwarmTeam(t *testing.T) {
	dir := teamDir(t)
	r := swarmIn(t, dir, nil, "", "run", "crew", "hello")
	if r.code != 2 || !strings.Contains(r.stderr, "crew is a team: use swarm team crew") {
		t.Errorf("run of a team: exit %d\n%s", r.code, r.stderr)
	}
}

// TestNoModelSaidOnce: with no model configured, the error says so once,
// with what to set.
func TestNoModelSaidOnce(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"swarm.yaml": "version: 1\nswarms:\n  s:\n    description: s\n    instructions: s\n"})
	r := swarmIn(t, dir, []string{"OPENAI_API_KEY=", "ANTHROPIC_API_KEY="}, "", "run", "s", "x")
	if r.code != 2 || strings.Count(r.stderr, "no model configured") != 1 || !strings.Contains(r.stderr, "pass --model") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
}

// TestYAMLErrorLine: a YAML indentation mistake is reported at its line,
// not at the first key of the mapping around it.
func TestYAMLErrorLine(t *testing.T) {
	dir := workdir(t)
	write(t, dir, map[string]string{"bad.yaml": "version: 1\nagents:\n  a:\n    instructions: x\n   description: y\nswarms:\n  s:\n    instructions: s\n"})
	r := swarmIn(t, dir, nil, "", "run", "--file", "bad.yaml", "s", "x")
	if r.code != 2 || !strings.Contains(r.stderr, "bad.yaml:5: invalid YAML: did not find expected key") {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
}

// TestInterruptIsNoError: Ctrl-C on events -f and on recover exits 130,
// as on run, without an error message.
func TestInterruptIsNoError(t *testing.T) {
	dir := slowDir(t)
	write(t, dir, map[string]string{"script.yaml": "slow:\n  - tool_calls: [{name: pause, arguments: {reason: \"ok\"}}]\n  - text: done\n    delay: 5s\n"})
	if r := swarmIn(t, dir, nil, "", "run", "-q", "--id", "p", "slow", "x"); r.code != 3 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	code, _, stderr := signalOn(t, dir, os.Interrupt, `"started"`, true, "events", "-f", "p")
	if code != 130 || strings.Contains(stderr, "context canceled") || strings.Contains(stderr, "swarm:") {
		t.Errorf("events -f: exit %d\n%s", code, stderr)
	}
	signalOn(t, dir, os.Kill, "resumed: yes", false, "resume", "--lease", "10s", "p", "yes")
	code, _, stderr = signalOn(t, dir, os.Interrupt, "waiting for 1 run(s)", false, "recover")
	if code != 130 || strings.Contains(stderr, "context canceled") || strings.Contains(stderr, "swarm:") {
		t.Errorf("recover: exit %d\n%s", code, stderr)
	}
}

// TestRecoverSaysWhatItDrives: swarm recover names each run it takes up
// and how it ended.
func TestRecoverSaysWhatItDrives(t *testing.T) {
	dir := slowDir(t)
	signalWhenStarted(t, dir, os.Kill, "run", "--lease", "1s", "--id", "k1", "slow", "x")
	r := swarmIn(t, dir, nil, "", "recover")
	if r.code != 0 || !strings.Contains(r.stderr, "continuing run k1\n") || !strings.Contains(r.stderr, "run k1 completed\n") {
		t.Errorf("recover: exit %d\n%s", r.code, r.stderr)
	}
}

// TestStatusOfAForkNamesItsOrigin: swarm status of a fork says which run
// and step it was forked from.
func TestStatusOfAForkNamesItsOrigin(t *testing.T) {
	dir := workdir(t)
	if r := swarmIn(t, dir, nil, "", "run", "-q", "--id", "a", "trip", "x"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "fork", "-q", "--id", "f", "a", "t2/model"); r.code != 0 {
		t.Fatalf("fork: exit %d\n%s", r.code, r.stderr)
	}
	r := swarmIn(t, dir, nil, "", "status", "f")
	if r.code != 0 || !strings.Contains(r.stdout, `"fork_of":"a","fork_at":"t2/model"`) || r.stderr != "forked from a at t2/model\n" {
		t.Errorf("status of the fork: exit %d %s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "status", "a"); strings.Contains(r.stdout, "fork_of") || r.stderr != "" {
		t.Errorf("status of the origin: %s\n%s", r.stdout, r.stderr)
	}
}

// TestLsListsTopLevelRuns: swarm ls lists top-level runs with their
// tokens; --all adds the child runs, with a parent column.
func TestLsListsTopLevelRuns(t *testing.T) {
	dir := workdir(t)
	if r := swarmIn(t, dir, nil, "", "run", "-q", "--id", "t", "tour", "x"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := swarmIn(t, dir, nil, "", "ls")
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(rows) != 2 || !strings.Contains(rows[0], "TOKENS") || strings.Contains(rows[0], "PARENT") ||
		!strings.HasPrefix(rows[1], "t ") || !strings.Contains(rows[1], " 395 ") {
		t.Errorf("ls: exit %d\n%s", r.code, r.stdout)
	}
	r = swarmIn(t, dir, nil, "", "ls", "--all")
	rows = strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(rows) != 4 || !strings.Contains(rows[0], "PARENT") {
		t.Fatalf("ls --all: exit %d\n%s", r.code, r.stdout)
	}
	for _, row := range rows[1:] {
		if f := strings.Fields(row); f[1] == "guide" && f[5] != "t" || f[1] == "tour" && f[5] != "-" {
			t.Errorf("ls --all: row %q", row)
		}
	}
}

// TestVShortIsNeverVersion: -v means verbose (serve, mcp), not version:
// at the top it is an unknown flag; --version and swarm version print the
// build.
func TestVShortIsNeverVersion(t *testing.T) {
	r := swarmIn(t, t.TempDir(), nil, "", "-v")
	if r.code != 2 || strings.HasPrefix(r.stdout, "swarm ") {
		t.Errorf("swarm -v: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
	r = swarmIn(t, t.TempDir(), nil, "", "--help")
	if !strings.Contains(r.stdout, "--version") || strings.Contains(r.stdout, "-v, --version") {
		t.Errorf("swarm --help: %s", r.stdout)
	}
}

// TestRunOfAnOrphanDrivesIt: swarm run --id X, X a run whose process died,
// continues it once its lease expires, instead of following it forever; a
// run whose owner lives is only followed.
func TestRunOfAnOrphanDrivesIt(t *testing.T) {
	dir := slowDir(t)
	signalWhenStarted(t, dir, os.Kill, "run", "--lease", "2s", "--id", "k1", "slow", "x")
	r := swarmIn(t, dir, nil, "", "run", "--id", "k1", "slow", "x")
	if r.code != 0 || strings.TrimSpace(r.stdout) != `"done"` || !strings.Contains(r.stderr, "run k1 had no live owner: continuing it here") {
		t.Errorf("run of an orphan: exit %d %s\n%s", r.code, r.stdout, r.stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	owner := swarmCmd(ctx, dir, "run", "--id", "k2", "slow", "x")
	pipe, err := owner.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	for sc.Scan() && !strings.Contains(sc.Text(), "started slow") {
	}
	go io.Copy(io.Discard, pipe)
	r = swarmIn(t, dir, nil, "", "run", "--id", "k2", "slow", "x")
	if err := owner.Wait(); err != nil {
		t.Errorf("the owner: %v", err)
	}
	if r.code != 0 || !strings.Contains(r.stderr, "run k2 is driven by another process") || strings.Contains(r.stderr, "continuing it here") {
		t.Errorf("run of a run with a live owner: exit %d %s\n%s", r.code, r.stdout, r.stderr)
	}
}
