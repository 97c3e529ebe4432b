package swarm_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

// claimKiller is a store that dies (see killable) right after a task is
// claimed: the claim is stored, the journal record that follows it is not.
type claimKiller struct{ *killable }

func (k claimKiller) ClaimTask(ctx context.Context, team string, id int64, member, ownerRun string) (store.Task, error) {
	t, err := k.killable.ClaimTask(ctx, team, id, member, ownerRun)
	k.dead.Store(true)
	return t, err
}

// TestTeamAutoClaimRecoversAfterCrash: the process of an idle teammate of
// an autonomous team dies right after the teammate claims a task by
// itself, before its journal says so. The recovered teammate takes up its
// own claim: the task is completed, its side effect done once.
func TestTeamAutoClaimRecoversAfterCrash(t *testing.T) {
	ctx := ctxT(t)
	var ships atomic.Int64
	ship := swarm.NewTool("ship", "Ship the release.", func(context.Context, struct{}) (string, error) {
		ships.Add(1)
		return "shipped", nil
	})
	script := scripted.Script{"alice": {
		scripted.Text("Waiting."),
		scripted.Tools(scripted.CallTool("ship", nil)),
		scripted.Tools(scripted.CallTool("complete_task", map[string]any{"task_id": 1, "result": "shipped"})),
		scripted.Text("Shipped."),
	}}
	team := seedTeam(func(s *swarm.TeamSpec) {
		s.Autonomous = true
		s.Members = []swarm.Teammate{{Name: "alice", Role: "ops", Prompt: "Wait for tasks.", Tools: []swarm.Tool{ship}}}
	})
	ks := &killable{fullStore: memory.New()}
	a, err := swarm.New(swarm.Config{Store: claimKiller{ks}, Model: scripted.New(script), Lease: 60 * time.Millisecond, Owner: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tr, err := team.Start(ctx, a, "", swarm.WithID("autoclaim"))
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "alice")
	if _, err := tr.AddTask(ctx, "Ship v2", ""); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "alice claims task 1 and A dies", func() bool {
		tasks, err := tr.Tasks(ctx)
		return err == nil && len(tasks) == 1 && tasks[0].Owner == "alice" && ks.dead.Load()
	})
	_, tr = recoverTeam(t, ctx, a, ks, team, script, "autoclaim")
	var task store.Task
	until(t, ctx, "task 1 is completed after the recovery", func() bool {
		tasks, err := tr.Tasks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		task = tasks[0]
		return task.Status == store.TaskCompleted
	})
	if task.Owner != "alice" || task.Result != "shipped" {
		t.Errorf("task 1 = %+v", task)
	}
	settledRoster(t, ctx, tr, "alice")
	if n := ships.Load(); n != 1 {
		t.Errorf("shipped %d times, want once", n)
	}
}
