package swarm

import (
	"strconv"
	"testing"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/store"
)

// TestStallsAreCountedAndBounded: drives that give up at one journal
// position count up, progress starts the count again, and the runs
// remembered stay bounded however many stall once and end elsewhere.
func TestStallsAreCountedAndBounded(t *testing.T) {
	var w workState
	for want := 1; want <= 3; want++ {
		if n := w.stalled("r", 7); n != want {
			t.Fatalf("stall %d at one position counted %d", want, n)
		}
	}
	if n := w.stalled("r", 8); n != 1 {
		t.Fatalf("a stall after progress counted %d, want 1", n)
	}
	for i := range maxStallsTracked * 2 {
		w.stalled("once-"+strconv.Itoa(i), 1)
	}
	if n := len(w.stalls); n > maxStallsTracked {
		t.Fatalf("%d runs remembered, want at most %d", n, maxStallsTracked)
	}
	w.unstall("r")
	if n := w.stalled("r", 8); n != 1 {
		t.Fatalf("a stall after unstall counted %d, want 1", n)
	}
}

// TestStallsOfADeletedRunAreNotANewRunsStalls: a run that stalled here and
// ended in another process, then was deleted, leaves its stalls behind;
// a new run with its id (another instance) starts counting from one, at
// the same journal position too.
func TestStallsOfADeletedRunAreNotANewRunsStalls(t *testing.T) {
	rt := &Runtime{}
	stall := &seam.Interrupted{Err: store.ErrUnavailable}
	old := &runner{rt: rt, id: "r", instance: "a"}
	old.seq.Store(1)
	for range maxStalls - 1 {
		if reason := old.giveUp(stall); reason != "" {
			t.Fatalf("the old run failed early: %s", reason)
		}
	}
	reused := &runner{rt: rt, id: "r", instance: "b"}
	reused.seq.Store(1)
	if reason := reused.giveUp(stall); reason != "" {
		t.Fatalf("the new run with the id failed at its first stall, counted with the old run's: %s", reason)
	}
}
