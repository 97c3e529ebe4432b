// Package swarmtest helps test swarms: a runtime on an in-memory store with
// a scripted model, and assertions over a run's journal.
package swarmtest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// NewRuntime returns a runtime on a new in-memory store whose default model
// plays script, and the scripted model itself. Model retries back off for a
// millisecond only. The runtime is closed when the test ends.
func NewRuntime(t testing.TB, script scripted.Script, defs ...swarm.Definition) (*swarm.Runtime, *scripted.Model) {
	t.Helper()
	if err := script.Validate(); err != nil {
		t.Fatalf("swarmtest: invalid script: %v", err)
	}
	m := scripted.New(script)
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m, RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("swarmtest: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(defs...); err != nil {
		t.Fatalf("swarmtest: %v", err)
	}
	return rt, m
}

// Events returns every recorded event of run id.
func Events(t testing.TB, rt *swarm.Runtime, id string) []swarm.Event {
	t.Helper()
	evs, err := rt.History(context.Background(), id, 0)
	if err != nil {
		t.Fatalf("swarmtest: events of %s: %v", id, err)
	}
	return evs
}

// Handoffs returns the targets of run id's handoffs in the order they
// started, at every depth.
func Handoffs(t testing.TB, rt *swarm.Runtime, id string) []string {
	t.Helper()
	var out []string
	for _, ev := range Events(t, rt, id) {
		if ev.Type == swarm.EventHandoffStarted {
			out = append(out, ev.Target)
		}
	}
	return out
}

// ToolCalls returns the names of run id's tool calls in order, built-ins
// (complete, pause, fail) included and handoffs excluded.
func ToolCalls(t testing.TB, rt *swarm.Runtime, id string) []string {
	t.Helper()
	var out []string
	for _, ev := range Events(t, rt, id) {
		if ev.Type == swarm.EventToolCall {
			out = append(out, ev.Tool)
		}
	}
	return out
}

// AssertHandoffs fails the test unless run id's handoffs went to want, in
// this order.
func AssertHandoffs(t testing.TB, rt *swarm.Runtime, id string, want ...string) {
	t.Helper()
	if got := Handoffs(t, rt, id); !slices.Equal(got, want) {
		t.Errorf("handoffs of %s = %q, want %q", id, got, want)
	}
}

// AssertToolCalls fails the test unless run id called these tools in this
// order.
func AssertToolCalls(t testing.TB, rt *swarm.Runtime, id string, want ...string) {
	t.Helper()
	if got := ToolCalls(t, rt, id); !slices.Equal(got, want) {
		t.Errorf("tool calls of %s = %q, want %q", id, got, want)
	}
}

// AssertScriptConsumed fails the test unless run id was served every step
// of m's script.
func AssertScriptConsumed(t testing.TB, m *scripted.Model, id string) {
	t.Helper()
	if left := m.Unconsumed(id); len(left) != 0 {
		t.Errorf("script not consumed by run %s: steps left per agent: %v", id, left)
	}
}

// AssertState fails the test unless run id is in state want.
func AssertState(t testing.TB, rt *swarm.Runtime, id string, want swarm.State) swarm.Status {
	t.Helper()
	s, err := rt.Status(context.Background(), id)
	if err != nil {
		t.Fatalf("swarmtest: status of %s: %v", id, err)
	}
	if s.State != want {
		t.Errorf("run %s is %s (reason %q), want %s", id, s.State, s.Reason, want)
	}
	return s
}

// AssertJournal fails the test unless run id's journal is well formed:
// sequence numbers 1..n without gaps, every step key once, exactly one
// start record first, and at most one end record, last.
func AssertJournal(t testing.TB, rt *swarm.Runtime, id string) {
	t.Helper()
	evs := Events(t, rt, id)
	keys := map[string]bool{}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("run %s: event %d has seq %d", id, i, ev.Seq)
		}
		if keys[ev.Key] {
			t.Errorf("run %s: step %q recorded twice", id, ev.Key)
		}
		keys[ev.Key] = true
		if (ev.Type == swarm.EventStarted) != (i == 0) {
			t.Errorf("run %s: start record at position %d", id, i)
		}
		if ev.Key == "end" && i != len(evs)-1 {
			t.Errorf("run %s: end record is not last", id)
		}
	}
}
