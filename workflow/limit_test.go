package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/workflow"
)

// gauge counts the items running at once and lets them go when want of
// them are in (or when one has waited too long).
type gauge struct {
	mu        sync.Mutex
	now, peak int
	want      int
	all       chan struct{}
}

func (g *gauge) item(ctx context.Context, n int) (int, error) {
	g.mu.Lock()
	g.now++
	g.peak = max(g.peak, g.now)
	if g.now == g.want {
		close(g.all)
	}
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.now--; g.mu.Unlock() }()
	select {
	case <-g.all:
		return n, nil
	case <-time.After(10 * time.Second):
		return 0, errors.New("not every item ran at once")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// A for-each with a limit above the runtime's MaxParallel runs that many
// items at once; one with a small limit runs no more than it.
func TestForEachLimit(t *testing.T) {
	items := make([]int, 20)
	g := &gauge{want: 20, all: make(chan struct{})}
	each := workflow.ForEach("each", workflow.Func("item", g.item)).Limit(20)
	_, _, st := run(t, workflow.Define("wide", "twenty at once", each), nil, mustJSON(t, items))
	if st.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s), want every item at once (the default MaxParallel is 16)", st.State, st.Reason)
	}
	small := &gauge{want: -1, all: make(chan struct{})}
	close(small.all)
	narrow := workflow.ForEach("each", workflow.Func("item", small.item)).Limit(3)
	if _, _, st := run(t, workflow.Define("narrow", "three at once", narrow), nil, mustJSON(t, items)); st.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", st.State, st.Reason)
	}
	if small.peak > 3 {
		t.Errorf("%d items ran at once, want at most 3", small.peak)
	}
	small.peak = 0
	par := workflow.Parallel("par", workflow.Join{Limit: 1}, workflow.Func("a", small.item), workflow.Func("b", small.item), workflow.Func("c", small.item))
	if _, _, st := run(t, workflow.Define("one", "one at once", par), nil, `1`); st.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", st.State, st.Reason)
	}
	if small.peak != 1 {
		t.Errorf("%d branches ran at once, want 1", small.peak)
	}
	_, err := workflow.New("w", "", workflow.Func("f", small.item).Limit(2))
	if err == nil || !strings.Contains(err.Error(), "only a for-each step has a limit") {
		t.Errorf("a limit on a function: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
