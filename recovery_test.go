package swarm_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// dying returns a store that dies after its after-th append (never for
// after ≤ 0): what a process killed right after that append looks like
// from the store's side.
func dying(t testing.TB, s store.Store, after int64) *swarmtest.Killable {
	t.Helper()
	k := swarmtest.NewKillable(t, s)
	k.DieAfter(after)
	return k
}

// sideEffects counts tool executions per idempotency key and process.
type sideEffects struct {
	mu   sync.Mutex
	runs map[string][]string // key -> processes that executed it
}

func (s *sideEffects) tool(process *atomic.Value) swarm.Tool {
	type bookIn struct {
		Item string `json:"item"`
	}
	return swarm.NewTool("book", "books an item", func(ctx context.Context, in bookIn) (string, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		k := swarm.IdempotencyKey(ctx)
		s.runs[k] = append(s.runs[k], process.Load().(string))
		return "booked " + in.Item, nil
	})
}

// TestCrashAtEveryJournalBoundary kills a run after each of its appends in
// turn and recovers it in a second runtime: every run completes with the
// same result, the journal holds each step once, and no tool call whose
// result was journaled runs again.
func TestCrashAtEveryJournalBoundary(t *testing.T) {
	script := scripted.Script{
		"trip": {
			scripted.Tools(
				scripted.CallTool("handoff_to_weather", map[string]any{"request": "forecast"}),
				scripted.CallTool("book", map[string]any{"item": "hut"}),
			),
			scripted.Tools(scripted.CallTool("book", map[string]any{"item": "bus"})),
			scripted.Text(`{"activity":"hiking"}`),
		},
		"weather": {
			scripted.Tools(scripted.CallTool("forecast", map[string]any{})),
			scripted.Fail("rate_limited"),
			scripted.Text("sunny"),
		},
	}
	forecast := swarm.NewTool("forecast", "forecast", func(ctx context.Context, _ struct{}) (string, error) { return "22C", nil })
	weatherAgent := &swarm.Agent{Name: "weather", Instructions: "forecast", Tools: []swarm.Tool{forecast}}
	effects := &sideEffects{runs: map[string][]string{}}
	var process atomic.Value
	def := swarm.Define[string, Activity]("trip", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(weatherAgent)}, Tools: []swarm.Tool{effects.tool(&process)}}
	})

	// A clean run tells how many appends and records a run makes.
	counter := dying(t, memory.New(), 0)
	rt0, err := swarm.New(swarm.Config{Store: counter, Model: scripted.New(script), RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt0.Close()
	process.Store("clean")
	res, run0, err := def.Run(ctxT(t), rt0, "go")
	if err != nil {
		t.Fatal(err)
	}
	want := res.(swarm.Completed[Activity]).Output
	total := int64(len(swarmtest.Events(t, rt0, run0.ID())))
	appends := counter.Appends()
	if appends < 8 {
		t.Fatalf("only %d appends in a clean run", appends)
	}

	// Without snapshots, and with one at every boundary: a recovery then
	// continues from the newest snapshot the dead process wrote.
	for _, every := range []int{0, 1} {
		for k := int64(1); k < appends; k++ {
			if !t.Run(fmt.Sprintf("snapshot_every_%d/after_append_%d", every, k), func(t *testing.T) {
				ctx := ctxT(t)
				effects.mu.Lock()
				effects.runs = map[string][]string{}
				effects.mu.Unlock()
				process.Store("A")
				b, id, s, journaledAtDeath := crashAndRecoverSnap(t, def, script, []byte(`"go"`), k, func() { process.Store("B") }, every)
				if s.State != swarm.StateCompleted {
					t.Fatalf("state %s (%s)", s.State, s.Reason)
				}
				run, err := def.Attach(ctx, b, id)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := run.Result(ctx)
				if got.(swarm.Completed[Activity]).Output != want {
					t.Errorf("result %+v, want %+v", got, want)
				}
				swarmtest.AssertJournal(t, b, id)
				evs := swarmtest.Events(t, b, id)
				if n := int64(len(evs)); n != total {
					t.Errorf("journal has %d records, a clean run %d", n, total)
				}
				checkTakeover(t, evs, !journaledAtDeath[id+"/end"])
				effects.mu.Lock()
				defer effects.mu.Unlock()
				if len(effects.runs) != 2 {
					t.Errorf("book ran for %d distinct calls, want 2: %v", len(effects.runs), effects.runs)
				}
				for key, procs := range effects.runs {
					// The idempotency key is run id + the step key of the result.
					if journaledAtDeath[key] && len(procs) > 1 {
						t.Errorf("call %s ran again after its result was journaled: %v", key, procs)
					}
				}
			}) {
				break // one broken boundary is enough: the next ones would each wait out their deadline
			}
		}
	}
}

// crashAndRecover starts a run of def on input in a runtime whose process
// dies after its k-th append, lets the lease run out, calls restart, and
// recovers the run in a second runtime on the same store. It returns that
// runtime, the run, its final status, and the step keys (prefixed with the
// run id, as idempotency keys are) journaled when the first one died.
func crashAndRecover(t *testing.T, def swarm.Definition, script scripted.Script, input []byte, k int64, restart func()) (*swarm.Runtime, string, swarm.Status, map[string]bool) {
	t.Helper()
	return crashAndRecoverSnap(t, def, script, input, k, restart, 0)
}

// crashAndRecoverSnap is crashAndRecover with both runtimes snapshotting
// runs every `every` records (0: the default).
func crashAndRecoverSnap(t *testing.T, def swarm.Definition, script scripted.Script, input []byte, k int64, restart func(), every int) (*swarm.Runtime, string, swarm.Status, map[string]bool) {
	t.Helper()
	ctx := ctxT(t)
	mem := memory.New()
	d := dying(t, mem, k)
	a, err := swarm.New(swarm.Config{Store: d, Model: scripted.New(script), Lease: 60 * time.Millisecond, RetryBackoff: time.Millisecond, Owner: "A", SnapshotEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := a.Start(ctx, def.ID(), input)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until A has died (made its last append).
	for !d.Dead() {
		if s, _ := mem.Get(ctx, id); s.State.Terminal() {
			break
		}
		time.Sleep(time.Millisecond)
	}
	journaledAtDeath := map[string]bool{}
	recs, _ := mem.Read(ctx, id, 0, 0)
	for _, r := range recs {
		journaledAtDeath[id+"/"+r.Key] = true
	}
	time.Sleep(80 * time.Millisecond) // A's lease runs out
	restart()
	b, err := swarm.New(swarm.Config{Store: mem, Model: scripted.New(script), Lease: time.Second, RetryBackoff: time.Millisecond, Owner: "B", PollInterval: 5 * time.Millisecond, SnapshotEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Register(def); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return b, id, s, journaledAtDeath
}

// checkTakeover checks the takeovers journaled in a run that process A
// started and process B recovered: one if A died before the run ended
// (want), none otherwise. It says who took over from whom, when A was
// last seen (before the takeover, not before A's last record), is on the
// first record B journaled, and marks the model call and the tool calls
// asked again (those A announced without a result) as second attempts.
func checkTakeover(t *testing.T, evs []swarm.Event, want bool) {
	t.Helper()
	var at []int
	for i, ev := range evs {
		if ev.Takeover != nil {
			at = append(at, i)
		}
	}
	if !want {
		if len(at) != 0 {
			t.Errorf("takeovers in a run that ended before its process died: %+v", evs[at[0]].Takeover)
		}
		return
	}
	if len(at) != 1 {
		t.Fatalf("%d takeovers journaled, want 1", len(at))
	}
	i := at[0]
	tk := evs[i].Takeover
	if tk.Node != "B" || tk.From != "A" || tk.Epoch < 2 || tk.LeaseUntil.IsZero() {
		t.Errorf("takeover %+v, want B taking over from A's lapsed lease", tk)
	}
	if prev := evs[i-1]; tk.LastSeen.Before(prev.Time) || !tk.LastSeen.Before(tk.At) || tk.At.After(evs[i].Time) {
		t.Errorf("takeover at %v, A last seen %v; A's last record at %v, B's first at %v", tk.At, tk.LastSeen, prev.Time, evs[i].Time)
		for _, e := range evs {
			t.Logf("%d %s %s %v", e.Seq, e.Type, e.Key, e.Time)
		}
	}
	redo, calls := map[string]bool{}, map[string]bool{}
	for _, k := range tk.Redo {
		redo[k] = true
	}
	for _, ev := range evs[:i] {
		if ev.Type == swarm.EventToolCall && redo[ev.Key] {
			calls[ev.CallID] = true // announced by A, its result lost
		}
	}
	for _, ev := range evs[i:] {
		again := ev.Attempt == 2
		if ev.Type == swarm.EventModelResponse && again != redo[ev.Key] {
			t.Errorf("model response %s is attempt %d; the takeover asks again %v", ev.Key, ev.Attempt, tk.Redo)
		}
		if ev.Type == swarm.EventToolResult && again != calls[ev.CallID] {
			t.Errorf("tool result %s is attempt %d; the takeover asks again %v", ev.Key, ev.Attempt, tk.Redo)
		}
	}
}
