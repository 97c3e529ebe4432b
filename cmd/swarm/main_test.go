package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/sqlite"
)

// build compiles the swarm command once per test binary.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "swarm-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "swarm")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// workdir copies the test definitions into a fresh directory.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"swarm.yaml", "script.yaml", "tool.sh"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func swarmCmd(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWARM_STORE=sqlite:"+filepath.Join(dir, "runs.db"), "EFFECTS="+dir, "SWARM_MODEL=")
	return cmd
}

func run(t *testing.T, dir string, args ...string) (stdout string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := swarmCmd(ctx, dir, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("swarm %v: %v\n%s", args, err, errb.String())
	}
	if testing.Verbose() {
		t.Logf("swarm %v -> %d\n%s", args, cmd.ProcessState.ExitCode(), errb.String())
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

func readJournal(t *testing.T, dir, id string) []store.Record {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.Read(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func TestRunCompletes(t *testing.T) {
	dir := workdir(t)
	out, code := run(t, dir, "run", "--id", "clean", "trip", "two people")
	if code != 0 || strings.TrimSpace(out) != `{"plan":"hike on Saturday"}` {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	out, code = run(t, dir, "status", "clean")
	var s struct {
		ID, Swarm, State string
		Turn             int
		Result           json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != 0 {
		t.Fatalf("status %q: %v", out, err)
	}
	if s.State != "completed" || s.Swarm != "trip" || s.Turn != 4 {
		t.Errorf("status %+v", s)
	}
	out, _ = run(t, dir, "events", "clean")
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Seq  int64
			Type string
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Seq != int64(n+1) || ev.Type == "" {
			t.Fatalf("event line %q: %v", l, err)
		}
		n++
	}
	if got := len(lines(t, filepath.Join(dir, "effects.log"))); got != 4 {
		t.Errorf("%d effects, want 4", got)
	}
}

func TestPauseExitResumeInNewProcess(t *testing.T) {
	dir := workdir(t)
	out, code := run(t, dir, "run", "--id", "p1", "approval", "a hut")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (paused); stdout %q", code, out)
	}
	var s struct {
		State, Reason, Context string
		Pause                  int64
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.State != "paused" || s.Reason != "approve the booking?" || s.Context != "hut for 2 nights" || s.Pause == 0 {
		t.Fatalf("paused status %q (%v)", out, err)
	}
	if _, code := run(t, dir, "stop", "nope", "x"); code == 0 {
		t.Error("stopping an unknown run succeeded")
	}
	// An answer to a pause the run does not wait at is refused: exit 2.
	if _, code := run(t, dir, "resume", "--pause", strconv.FormatInt(s.Pause+1, 10), "p1", "approved"); code != 2 {
		t.Errorf("resume --pause of another pause: exit %d, want 2", code)
	}
	if out, _ := run(t, dir, "status", "p1"); !strings.Contains(out, `"state": "paused"`) && !strings.Contains(out, `"state":"paused"`) {
		t.Fatalf("after a refused resume: %s", out)
	}
	out, code = run(t, dir, "resume", "--pause", strconv.FormatInt(s.Pause, 10), "p1", "approved")
	if code != 0 || strings.TrimSpace(out) != `{"plan":"hut booked"}` {
		t.Fatalf("resume: exit %d, stdout %q", code, out)
	}
	// Refused by the run's state: exit 2, not 1 (a failed run).
	if _, code := run(t, dir, "resume", "p1", "again"); code != 2 {
		t.Errorf("resuming a completed run: exit %d, want 2", code)
	}
	if _, code := run(t, dir, "stop", "p1", "late"); code != 2 {
		t.Errorf("stopping a completed run: exit %d, want 2", code)
	}
}

func TestStopPausedRun(t *testing.T) {
	dir := workdir(t)
	if _, code := run(t, dir, "run", "--id", "p2", "approval", "x"); code != 3 {
		t.Fatalf("exit %d", code)
	}
	out, code := run(t, dir, "stop", "p2", "changed my mind")
	if code != 0 || !strings.Contains(out, `"stopped"`) {
		t.Fatalf("stop: exit %d, %q", code, out)
	}
}

// TestCrashAtEveryJournalBoundary kills `swarm run` with SIGKILL once the
// journal holds k records, for every k, then runs `swarm recover`: every
// run completes with the right result, no step is journaled twice, and no
// tool call whose result was journaled before the kill runs again.
func TestCrashAtEveryJournalBoundary(t *testing.T) {
	crashMatrix(t, "trip", `{"plan":"hike on Saturday"}`)
}

// TestCrashInChildSwarms kills a run tree (a parent with two child swarms
// running in parallel next to an agent handoff) at every record of the
// whole tree.
func TestCrashInChildSwarms(t *testing.T) {
	crashMatrix(t, "tour", `{"plan":"two tours"}`)
}

// treeJournal returns the journals of run root and its descendants, keyed
// by run id relative to the root ("" for the root).
func treeJournal(ctx context.Context, t *testing.T, st store.Store, root string) map[string][]store.Record {
	t.Helper()
	out := map[string][]store.Record{}
	var walk func(id string)
	walk = func(id string) {
		recs, err := st.Read(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(id, root)] = recs
		kids, err := st.List(ctx, store.Filter{Parent: id})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			walk(k.ID)
		}
	}
	walk(root)
	return out
}

func treeSize(j map[string][]store.Record) int {
	n := 0
	for _, recs := range j {
		n += len(recs)
	}
	return n
}

// startWatched starts swarm with args in dir, and opens its store once
// the process has created it, to watch what it writes; stderr collects
// the process's.
func startWatched(ctx context.Context, t *testing.T, dir string, args ...string) (cmd *exec.Cmd, stderr *bytes.Buffer, st *sqlite.Store) {
	t.Helper()
	cmd = swarmCmd(ctx, dir, args...)
	stderr = new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "runs.db")
	for st == nil {
		if _, err := os.Stat(db); err == nil {
			st, _ = sqlite.Open(ctx, db)
		}
		if ctx.Err() != nil {
			t.Fatalf("swarm %v never created its store\n%s", args, stderr)
		}
		time.Sleep(time.Millisecond)
	}
	return cmd, stderr, st
}

// crashMatrix runs swarm once cleanly, then once per record k of the clean
// run's tree: SIGKILL once the tree holds k records, then swarm recover.
// Every recovered tree must equal the clean one record for record (no
// child started twice, no step repeated), every side effect must happen
// once, and no call journaled before the kill may run again.
func crashMatrix(t *testing.T, swarmID, wantResult string) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	clean := workdir(t)
	if out, code := run(t, clean, "run", "--id", "c", swarmID, "x"); code != 0 {
		t.Fatalf("clean run: %d %s", code, out)
	}
	cst, err := sqlite.Open(context.Background(), filepath.Join(clean, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	want := treeJournal(context.Background(), t, cst, "c")
	cst.Close()
	total := treeSize(want)
	wantEffects := len(lines(t, filepath.Join(clean, "effects.log")))
	for k := 1; k < total; k++ {
		t.Run(fmt.Sprintf("after_record_%02d", k), func(t *testing.T) {
			dir := workdir(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd, errb, st := startWatched(ctx, t, dir, "run", "--lease", "500ms", "--id", "r", swarmID, "x")
			for {
				runs, err := st.List(ctx, store.Filter{})
				n := int64(0)
				for _, r := range runs {
					n += r.LastSeq
				}
				if err == nil && n >= int64(k) {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("timed out waiting for record %d: %v (%d records)\n%s", k, err, n, errb.String())
				}
				time.Sleep(time.Millisecond)
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			atKill := treeJournal(ctx, t, st, "r")
			st.Close()
			journaled := map[string]bool{}
			for rel, recs := range atKill {
				for _, rec := range recs {
					journaled["r"+rel+"/"+rec.Key] = true
				}
			}
			inv := filepath.Join(dir, "invocations.log")
			if _, err := os.Stat(inv); err == nil {
				if err := os.Rename(inv, inv+".before"); err != nil {
					t.Fatal(err)
				}
			}
			out, code := run(t, dir, "recover", "--lease", "500ms")
			if code != 0 && treeSize(atKill) < total {
				t.Fatalf("recover exit %d: %s", code, out)
			}
			var s struct {
				State  string
				Result json.RawMessage
			}
			out, _ = run(t, dir, "status", "r")
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Fatal(err)
			}
			if s.State != "completed" || string(s.Result) != wantResult {
				t.Fatalf("after recover: %s", out)
			}
			st, err := sqlite.Open(ctx, filepath.Join(dir, "runs.db"))
			if err != nil {
				t.Fatal(err)
			}
			got := treeJournal(ctx, t, st, "r")
			st.Close()
			if len(got) != len(want) {
				t.Errorf("tree has %d runs, a clean run %d", len(got), len(want))
			}
			for rel, recs := range got {
				if len(recs) != len(want[rel]) {
					t.Errorf("run r%s: %d records, a clean run %d", rel, len(recs), len(want[rel]))
				}
				keys := map[string]bool{}
				for i, rec := range recs {
					if rec.Seq != int64(i+1) || keys[rec.Key] {
						t.Errorf("run r%s record %d: seq %d key %s (duplicate: %v)", rel, i, rec.Seq, rec.Key, keys[rec.Key])
					}
					keys[rec.Key] = true
				}
			}
			effects := lines(t, filepath.Join(dir, "effects.log"))
			seen := map[string]bool{}
			for _, e := range effects {
				if seen[e] {
					t.Errorf("side effect performed twice: %s", e)
				}
				seen[e] = true
			}
			if len(effects) != wantEffects {
				t.Errorf("%d effects, want %d", len(effects), wantEffects)
			}
			for _, l := range lines(t, inv) {
				key := strings.TrimPrefix(l, "invoke ")
				if journaled[key] {
					t.Errorf("completed call %s ran again after the crash", key)
				}
			}
		})
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	dir := workdir(t)
	for _, args := range [][]string{
		{"run", "nope", "x"},
		{"run", "--file", "missing.yaml", "trip", "x"},
		{"run", "--model", "martian:gpt", "trip", "x"},
		{"ls", "--state", "sleeping"},
		{"frobnicate"},
	} {
		if _, code := run(t, dir, args...); code != 2 {
			t.Errorf("swarm %v exited %d, want 2", args, code)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("version: 1\nagents:\n  a:\n    instructions: x\n    handofs: [b]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := swarmCmd(context.Background(), dir, "run", "--file", "bad.yaml", "trip", "x")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "bad.yaml:5") {
		t.Errorf("malformed file: exit %d, %s", cmd.ProcessState.ExitCode(), out)
	}
	if out, code := run(t, dir, "ls"); code != 0 || !strings.Contains(out, "ID") {
		t.Errorf("ls: %d %q", code, out)
	}
}

// TestEventsFollowAfterEnd: `swarm events -f --after N` of a finished run,
// N its last event, ends at once instead of waiting for events that will
// never come.
func TestEventsFollowAfterEnd(t *testing.T) {
	dir := workdir(t)
	if out, code := run(t, dir, "run", "--id", "done", "trip", "two people"); code != 0 {
		t.Fatalf("run: exit %d, stdout %q", code, out)
	}
	last := readJournal(t, dir, "done")
	seq := strconv.FormatInt(last[len(last)-1].Seq, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := swarmCmd(ctx, dir, "events", "-f", "--after", seq, "done")
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("swarm events -f --after %s did not end", seq)
	}
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("swarm events -f --after %s: %v, stdout %q", seq, err, out)
	}
}
