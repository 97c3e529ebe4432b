package team_test

// Rules of teams that a mutation sample found no test checking: each test
// here fails when its rule is broken by one line.

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
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
