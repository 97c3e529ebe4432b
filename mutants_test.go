package swarm_test

// Rules that a mutation sample found no test checking: each test here fails
// when its rule is broken by one line.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
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

// TestSpawnTeammateStopsAtMaxMembers: a team of at most two teammates
// spawns two; spawn_teammate refuses the third.
func TestSpawnTeammateStopsAtMaxMembers(t *testing.T) {
	ctx := ctxT(t)
	spawn := func(name string) scripted.Step {
		return scripted.Tools(scripted.CallTool("spawn_teammate", map[string]string{"name": name, "role": "helper"}))
	}
	script := scripted.Script{"lead": {spawn("ann"), spawn("ben"), spawn("cat"), scripted.Text("done")}}
	rt, _ := swarmtest.NewRuntime(t, script)
	tr, err := seedTeam(func(s *team.TeamSpec) { s.MaxMembers = 2 }).Start(ctx, rt, "Spawn three helpers.")
	if err != nil {
		t.Fatal(err)
	}
	errs := errorResults(t, rt, tr.ID())
	if len(errs) != 1 || !strings.Contains(errs[0], "maximum of 2 teammates") {
		t.Errorf("error results %q, want the third spawn refused at the maximum of 2", errs)
	}
	ms := settledRoster(t, ctx, tr, "ann", "ben")
	if got := states(ms); got != "lead(lead):idle ann(helper):idle ben(helper):idle" {
		t.Errorf("roster %s, want the lead, ann and ben", got)
	}
}

// TestPlanApprovalIsPerTeammate: the lead approving alice's plan unlocks
// alice's gated tools, not bob's: bob, who submitted no plan, is refused.
func TestPlanApprovalIsPerTeammate(t *testing.T) {
	ctx := ctxT(t)
	var deploys atomic.Int64
	deploy := deployTool(&deploys)
	req := "gate~alice/c1/t1/tool/call_alice_0_0" // alice's submit_plan call's idempotency key
	script := scripted.Script{
		"lead": {
			scripted.Tools(scripted.CallTool("review_plan", map[string]any{"request_id": req, "approve": true})),
			scripted.Text("Approved alice's plan."),
		},
		"alice": {
			scripted.Tools(scripted.CallTool("submit_plan", map[string]string{"plan": "deploy v2"})),
			scripted.Text("Plan submitted."),
			scripted.Text("Approved; waiting."),
		},
		"bob": {
			scripted.Tools(scripted.CallTool("deploy", nil)),
			scripted.Text("Tried to deploy."),
		},
	}
	tdef := seedTeam(func(s *team.TeamSpec) {
		s.Members = []team.Teammate{
			{Name: "alice", Role: "ops", Prompt: "Plan the deploy.", Tools: []swarm.Tool{deploy}, PlanApproval: true},
			{Name: "bob", Role: "ops", Tools: []swarm.Tool{deploy}, PlanApproval: true},
		}
	})
	rt, _ := swarmtest.NewRuntime(t, script)
	tr, err := tdef.Start(ctx, rt, "", swarm.WithID("gate"))
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "alice", "bob")
	if _, err := tr.Say(ctx, "Review alice's plan."); err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "alice", "bob")
	reqs, err := tr.Requests(ctx)
	if err != nil || len(reqs) != 1 || reqs[0].ID != req || reqs[0].From != "alice" || reqs[0].State != store.RequestApproved {
		t.Fatalf("requests %+v, %v; want alice's plan approved", reqs, err)
	}
	if _, err := tr.Send(ctx, "bob", "Deploy v2 now."); err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "alice", "bob")
	if n := deploys.Load(); n != 0 {
		t.Errorf("deploy ran %d times: alice's approved plan unlocked bob's tools", n)
	}
	if errs := errorResults(t, rt, "gate~bob"); len(errs) != 1 || !strings.Contains(errs[0], "bob needs an approved plan") {
		t.Errorf("bob's error results %q, want deploy refused for want of a plan", errs)
	}
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
			def := longSwarm(&swarm.Compaction{Window: 1_000_000, Messages: tc.messages, Keep: 1}, rounds)
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
