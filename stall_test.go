package swarm

import (
	"strconv"
	"testing"
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
