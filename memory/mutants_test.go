package memory_test

// Rules that a mutation sample found no test checking: each test here fails
// when its rule is broken by one line.

import (
	"context"
	"slices"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	storemem "github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

// TestOneCallWritesEachEntry: one tool call that writes two entries keeps
// both. Each write carries the call's idempotency key with the entry's
// key, so the second is not taken for a repeat of the first.
func TestOneCallWritesEachEntry(t *testing.T) {
	ctx := swarmtest.Context(t)
	st := storemem.New()
	mem := &memory.Memory{Store: st, Bank: "notes"}
	both := swarm.NewTool("note_both", "notes two things", func(ctx context.Context, _ struct{}) (string, error) {
		for _, e := range []store.MemoryEntry{{Key: "seat", Text: "aisle"}, {Key: "meal", Text: "vegetarian"}} {
			if _, err := mem.Put(ctx, "notes", e); err != nil {
				return "", err
			}
		}
		return "noted", nil
	})
	def := swarm.Define[string, string]("n", "", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{both}} })
	rt := newRuntime(t, st, scripted.Script{"n": {scripted.Tools(scripted.CallTool("note_both", map[string]any{})), scripted.Text("done")}}, "A", def)
	if res, _, err := def.Run(ctx, rt, "x"); err != nil || res.State() != swarm.StateCompleted {
		t.Fatalf("run: %#v, %v", res, err)
	}
	for key, want := range map[string]string{"seat": "aisle", "meal": "vegetarian"} {
		if e, err := mem.Get(ctx, "notes", key); err != nil || e.Text != want {
			t.Errorf("entry %s: %+v, %v; want %q", key, e, err, want)
		}
	}
}

// probeBanks returns a tool that fills the banks "user:{user}",
// "team:{root}" and "run:{run}" of st in the run that calls it, and sends
// the run's id and the names (or errors) on got.
func probeBanks(st store.Store, got chan<- []string) swarm.Tool {
	return swarm.NewTool("probe", "fills bank names", func(ctx context.Context, _ struct{}) (string, error) {
		out := []string{swarm.RunID(ctx)}
		for _, b := range []string{"user:{user}", "team:{root}", "run:{run}"} {
			name, err := (&memory.Memory{Store: st, Bank: b}).BankFor(ctx)
			if err != nil {
				name = "error: " + err.Error()
			}
			out = append(out, name)
		}
		got <- out
		return "ok", nil
	})
}

// checkBanks checks what probeBanks sent from a run below root: {user}
// filled from the root's values, {root} with the root's id, {run} with
// the probing run's own.
func checkBanks(t *testing.T, got []string, root string) {
	t.Helper()
	probed := got[0]
	if probed == "" || probed == root {
		t.Fatalf("the probe ran in run %q, want a run below the root %s", probed, root)
	}
	if want := []string{"user:carol", "team:" + root, "run:" + probed}; !slices.Equal(got[1:], want) {
		t.Errorf("banks filled below the root: %q, want %q", got[1:], want)
	}
}

// TestBankPlaceholdersThroughParents: a run below the root (a child swarm
// of a child swarm) fills {user} from the value the root was started
// with, {root} with the root's id and {run} with its own.
func TestBankPlaceholdersThroughParents(t *testing.T) {
	ctx := swarmtest.Context(t)
	st := storemem.New()
	got := make(chan []string, 1)
	probe := probeBanks(st, got)
	grandkid := swarm.Define[string, string]("grandkid", "probes", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{probe}} })
	kid := swarm.Define[string, string]("kid", "asks the grandkid", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(grandkid)}}
	})
	root := swarm.Define[string, string]("root", "asks the kid", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(kid)}}
	})
	script := scripted.Script{
		"root":     {scripted.Tools(scripted.CallTool("handoff_to_kid", map[string]any{"request": "go"})), scripted.Text("done")},
		"kid":      {scripted.Tools(scripted.CallTool("handoff_to_grandkid", map[string]any{"request": "go"})), scripted.Text("done")},
		"grandkid": {scripted.Tools(scripted.CallTool("probe", map[string]any{})), scripted.Text("done")},
	}
	rt := newRuntime(t, st, script, "A", grandkid, kid, root)
	res, run, err := root.Run(ctx, rt, "x", swarm.WithValues(map[string]any{"user": "carol"}))
	if err != nil || res.State() != swarm.StateCompleted {
		t.Fatalf("run: %#v, %v", res, err)
	}
	checkBanks(t, swarmtest.Recv(t, ctx, got, "the probe"), run.ID())
}

// TestBankPlaceholdersOfATeammate: a teammate fills {user} from the value
// its team's run was started with, and {root} with the lead's run id,
// which teammates share.
func TestBankPlaceholdersOfATeammate(t *testing.T) {
	ctx := swarmtest.Context(t)
	st := storemem.New()
	got := make(chan []string, 1)
	crew := team.DefineTeam("crew", "", team.TeamSpec{
		Lead:    &swarm.Agent{Name: "lead", Instructions: "Lead."},
		Members: []team.Teammate{{Name: "alice", Role: "helper", Prompt: "Probe.", Tools: []swarm.Tool{probeBanks(st, got)}}},
	})
	rt := newRuntime(t, st, scripted.Script{
		"lead":  {scripted.Text("started")},
		"alice": {scripted.Tools(scripted.CallTool("probe", map[string]any{})), scripted.Text("probed")},
	}, "A")
	tr, err := crew.Start(ctx, rt, "Work.", swarm.WithValues(map[string]any{"user": "carol"}))
	if err != nil {
		t.Fatal(err)
	}
	checkBanks(t, swarmtest.Recv(t, ctx, got, "alice's probe"), tr.ID())
}
