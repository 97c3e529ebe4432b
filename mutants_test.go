package swarm_test

// Rules that a mutation sample found no test checking: each test here fails
// when its rule is broken by one line.

import (
	"context"
	"fmt"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
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
