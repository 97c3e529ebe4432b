package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/sqlite"
)

// addSlowSwarm adds to dir's definitions a swarm "slow" whose only model
// call takes ten minutes: a run of it is inside a model call until stopped.
func addSlowSwarm(t *testing.T, dir string) {
	t.Helper()
	appendFile(t, filepath.Join(dir, "swarm.yaml"), "  slow:\n    description: Thinks for a long time\n    instructions: Think.\n")
	appendFile(t, filepath.Join(dir, "script.yaml"), "slow:\n  - text: \"late\"\n    delay: 10m\n")
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// waitRun polls the store in dir until run id satisfies ok, failing when
// ctx ends first.
func waitRun(t *testing.T, ctx context.Context, dir, id, what string, ok func(store.Run) bool) store.Run {
	t.Helper()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var last store.Run
	for {
		r, err := st.Get(ctx, id)
		if err == nil {
			if ok(r) {
				return r
			}
			last = r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s never %s; last seen %+v (%v)", id, what, last, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestStopAndDrainAcrossProcesses: `swarm stop` in another process stops a
// run that `swarm serve` is driving, inside a model call, and exits 0; the
// server holds its leases for ten minutes, so only the store's change
// watch, not a heartbeat, can bring the stop to it in time. Then SIGTERM
// makes the server, whose drain would wait ten minutes for open work, hand
// back a run inside a model call at once, and another server adopts it.
func TestStopAndDrainAcrossProcesses(t *testing.T) {
	dir := workdir(t)
	addSlowSwarm(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := serve(t, ctx, dir, nil, "--lease", "10m", "--shutdown-timeout", "10m")

	const stops = 5
	var latencies []time.Duration
	for i := range stops {
		id := fmt.Sprintf("slow%d", i)
		if code := httpJSON(t, "POST", s.URL+"/v1/swarms/slow/runs", `{"id": "`+id+`", "input": "x"}`, nil); code != 201 {
			t.Fatalf("start %s: %d", id, code)
		}
		waitRun(t, ctx, dir, id, "was leased", func(r store.Run) bool { return r.Owner != "" && r.LastSeq >= 1 })
		began := time.Now()
		cmd := swarmCmd(ctx, dir, "stop", "--wait", "1m", id, "enough")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		took := time.Since(began)
		if err != nil {
			t.Fatalf("swarm stop %s: %v\nstdout %s\nstderr %s\nserver: %s", id, err, stdout.String(), stderr.String(), s.Log())
		}
		if !strings.Contains(stdout.String(), `"stopped"`) || !strings.Contains(stderr.String(), "stopped run "+id+": enough") {
			t.Fatalf("swarm stop %s: stdout %q stderr %q", id, stdout.String(), stderr.String())
		}
		recs := readJournal(t, dir, id)
		end := recs[len(recs)-1]
		if end.Type != "stopped" {
			t.Fatalf("run %s: last record %s %s, want stopped", id, end.Key, end.Type)
		}
		r := storedRun(t, dir, id)
		if r.State != store.Stopped || r.Reason != "enough" {
			t.Fatalf("run %s after stop: %s %q", id, r.State, r.Reason)
		}
		// From the start of `swarm stop` to the owner's stopped record;
		// the command itself also waits for the store to show it.
		latencies = append(latencies, end.Time.Sub(began))
		t.Logf("stop %s: owner recorded it %s after `swarm stop` started; the command took %s", id, end.Time.Sub(began).Round(time.Millisecond), took.Round(time.Millisecond))
	}
	slices.Sort(latencies)
	t.Logf("cross-process stop, median of %d: %s (from `swarm stop` start to the owner's stopped record)", stops, latencies[stops/2].Round(time.Millisecond))

	// SIGTERM while a run waits for its model: the run is handed back at
	// once, not after the drain timeout.
	if code := httpJSON(t, "POST", s.URL+"/v1/swarms/slow/runs", `{"id": "drained", "input": "x"}`, nil); code != 201 {
		t.Fatalf("start drained: %d", code)
	}
	first := waitRun(t, ctx, dir, "drained", "was leased", func(r store.Run) bool { return r.Owner != "" && r.LastSeq >= 1 })
	began := time.Now()
	if err := s.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Exited:
	case <-ctx.Done():
		t.Fatalf("swarm serve did not exit after SIGTERM with a run in a model call: %s", s.Log())
	}
	t.Logf("drain: swarm serve exited %s after SIGTERM", time.Since(began).Round(time.Millisecond))
	if code := s.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after SIGTERM: %s", code, s.Log())
	}
	if r := storedRun(t, dir, "drained"); r.State != store.Running || r.Owner != "" {
		t.Fatalf("drained run: state %s owner %q, want running and released", r.State, r.Owner)
	}
	s2 := serve(t, ctx, dir, nil, "--lease", "10m")
	adopted := waitRun(t, ctx, dir, "drained", "was adopted", func(r store.Run) bool { return r.Owner != "" })
	if adopted.Owner == first.Owner || adopted.Epoch <= first.Epoch {
		t.Errorf("drained run not adopted by the new server: owner %q epoch %d, was %q epoch %d", adopted.Owner, adopted.Epoch, first.Owner, first.Epoch)
	}
	_ = s2
}
