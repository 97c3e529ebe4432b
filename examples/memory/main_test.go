package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/store/sqlite"
)

// The second visit, a new runtime on the same store, finds the preference
// the first wrote and books with it: the demo's point. It writes nothing,
// so the entry is still the first visit's (version 1), not a rewrite that
// would hide whether anything was remembered.
func TestSecondVisitFindsThePreference(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "runs.db")
	var out bytes.Buffer
	if _, err := run(ctx, ".", db, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	_, second, ok := strings.Cut(out.String(), "visit 2")
	if !ok {
		t.Fatalf("no second visit:\n%s", out.String())
	}
	if !strings.Contains(second, `"hits":[{"key":"preferences/seat","text":"Prefers an aisle seat"`) {
		t.Errorf("the second visit's search did not find the preference:\n%s", second)
	}
	if strings.Contains(second, "memory_write") {
		t.Errorf("the second visit wrote the preference again:\n%s", second)
	}
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := st.GetMemory(ctx, "user:alice", "preferences/seat")
	if err != nil || e.Version != 1 {
		t.Errorf("preferences/seat: %+v, %v; want the first visit's write, version 1", e, err)
	}
}
