package swarm_test

// Rules that a mutation sample found no test checking: each test here fails
// when its rule is broken by one line.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/swarmtest"
)

// errorResults returns the outputs of run id's tool calls that failed, as
// "tool: output".
func errorResults(t *testing.T, rt *swarm.Runtime, id string) []string {
	t.Helper()
	var out []string
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventToolResult && ev.IsError {
			out = append(out, ev.Tool+": "+ev.Output)
		}
	}
	return out
}

// TestCompactionMessageCountIsExclusive: Messages compacts a history that
// holds more messages than it, not one that holds exactly as many.
func TestCompactionMessageCountIsExclusive(t *testing.T) {
	// Three rounds of a tool call and its result after the user's
	// message: the last request holds 7 messages.
	const rounds, last = 3, 7
	for _, tc := range []struct {
		messages, compactions int
	}{{last, 0}, {last - 1, 1}} {
		t.Run(fmt.Sprint("messages=", tc.messages), func(t *testing.T) {
			rt, _ := swarmtest.NewRuntime(t, longScript(rounds))
			def := longSwarm(&compact.Config{Window: 1_000_000, Messages: tc.messages, Keep: 1}, rounds)
			res, run, err := def.Run(ctxT(t), rt, "echo a little")
			if err != nil {
				t.Fatal(err)
			}
			if res.State() != swarm.StateCompleted {
				t.Fatalf("result %#v", res)
			}
			if got := compactions(t, rt, run.ID()); len(got) != tc.compactions {
				t.Errorf("Messages %d with at most %d messages in a request: %d compactions %q, want %d", tc.messages, last, len(got), got, tc.compactions)
			}
		})
	}
}

// TestSnapshotRecordsChildRuns: a run that started a child swarm says so
// in the snapshots it takes afterwards, as its journal does: a run
// continued from a snapshot stops the children it knows of when it ends.
func TestSnapshotRecordsChildRuns(t *testing.T) {
	step := swarm.NewTool("step", "a step", func(ctx context.Context, _ struct{}) (string, error) { return "stepped", nil })
	kid := swarm.Define[string, string]("kid", "a child swarm", func(string) swarm.Spec { return swarm.Spec{Instructions: "Answer."} })
	parent := swarm.Define[string, string]("parent", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{step}, Handoffs: []swarm.Handoff{swarm.ToSwarm(kid)}}
	})
	script := scripted.Script{
		"parent": {
			scripted.Tools(scripted.CallTool("handoff_to_kid", map[string]string{"request": "hello"})),
			scripted.Tools(scripted.CallTool("step", nil)),
			scripted.Text("done"),
		},
		"kid": {scripted.Text("hi")},
	}
	ctx := ctxT(t)
	mem := &readCounter{Store: memory.New()}
	rt := snapRuntime(t, mem, newReqLog(scripted.New(script)), 1)
	if err := rt.Register(kid, parent); err != nil {
		t.Fatal(err)
	}
	res, run, err := parent.Run(ctx, rt, "go")
	if err != nil || res.State() != swarm.StateCompleted {
		t.Fatalf("run: %#v, %v", res, err)
	}
	if _, err := mem.Snapshot(ctx, run.ID()); err != nil {
		t.Fatalf("no snapshot: %v", err)
	}
	if kids := children(t, rt, run.ID()); len(kids) != 1 {
		t.Fatalf("children %+v, want the kid", kids)
	}
	checkSnapshotCounts(t, mem, run.ID())
}

// branches is a strategy that runs n branches of Parallel, each waiting
// at bar (bctx bounds the wait) and staying a while longer, so that a
// branch beyond the limit of concurrent branches would start and show in
// bar's peak (the stay bounds nothing and is never asserted).
type branches struct {
	n    int
	bar  *swarmtest.Barrier
	bctx context.Context
}

func (b branches) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	errs := d.Parallel(ctx, b.n, func(ctx context.Context, i int) error {
		b.bar.Enter()
		defer b.bar.Leave()
		if err := b.bar.Wait(b.bctx); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return json.Marshal("done")
}

// TestStrategyParallelBoundedByMaxParallel: a strategy's Driver.Parallel
// runs at most Config.MaxParallel branches at once, as a model's tool
// calls are run, and all of them.
func TestStrategyParallelBoundedByMaxParallel(t *testing.T) {
	const n, k = 6, 2
	ctx := ctxT(t)
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	bar := swarmtest.NewBarrier(k)
	def := swarm.Define[string, string]("branches", "", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(branches{n, bar, bctx})}
	})
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{}), MaxParallel: k})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	res, _, err := def.Run(ctx, rt, "go")
	if err != nil || res.State() != swarm.StateCompleted {
		t.Fatalf("run: %#v, %v", res, err)
	}
	if err := bar.Err(); err != nil {
		t.Fatalf("MaxParallel %d: fewer than %d branches ran at once: %v", k, k, err)
	}
	if p := bar.Peak(); p != k {
		t.Errorf("MaxParallel %d: peak of %d branches running at once", k, p)
	}
	if got := bar.Total(); got != n {
		t.Errorf("%d branches ran, want %d", got, n)
	}
}

// answers completes its run at once: its parts are never sent to a model.
type answers struct{}

func (answers) Drive(context.Context, *strategy.Driver) (json.RawMessage, error) {
	return json.Marshal("ok")
}

// TestPartOfExactlyMaxBlobBytes: a part of exactly store.MaxBlobBytes is
// accepted, and kept as a blob of the run; one byte more is refused, by
// the run's start and by the store.
func TestPartOfExactlyMaxBlobBytes(t *testing.T) {
	ctx := ctxT(t)
	st := memory.New()
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(scripted.Script{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	def := swarm.Define[string, string]("look", "", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(answers{})} })
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, store.MaxBlobBytes+1)
	if err := store.CheckBlob("r", data[:store.MaxBlobBytes]); err != nil {
		t.Errorf("the store refuses a blob of exactly MaxBlobBytes: %v", err)
	}
	if err := store.CheckBlob("r", data); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("the store's check of a blob one byte over MaxBlobBytes: %v, want ErrTooLarge", err)
	}
	if _, err := def.Start(ctx, rt, "x", swarm.WithParts(model.Image("image/png", data))); !errors.Is(err, swarm.ErrInvalidInput) {
		t.Errorf("a part one byte over MaxBlobBytes: %v, want ErrInvalidInput", err)
	}
	run, err := def.Start(ctx, rt, "x", swarm.WithParts(model.Image("image/png", data[:store.MaxBlobBytes])))
	if err != nil {
		t.Fatalf("a part of exactly MaxBlobBytes: %v", err)
	}
	if got, err := st.Blob(ctx, run.ID(), store.BlobHash(data[:store.MaxBlobBytes])); err != nil || len(got) != store.MaxBlobBytes {
		t.Errorf("the part's blob: %d bytes, %v; want %d", len(got), err, store.MaxBlobBytes)
	}
}
