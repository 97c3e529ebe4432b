package team_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/team"
)

// claimRounds is how many tasks two autonomous teammates race for: 1,000
// on the memory store; fewer on the SQL stores, whose every round costs
// a few transactions and fsyncs, and under the race detector.
func claimRounds(sql bool) int {
	switch {
	case sql && raceEnabled:
		return 25
	case sql:
		return 200
	case raceEnabled || testing.Short():
		return 200
	}
	return 1000
}

// claimTeam is an autonomous team of alice and bob, who answer every
// task they claim with text.
func claimTeam(rounds int) (*team.Team, scripted.Script) {
	steps := make([]scripted.Step, rounds+2)
	for i := range steps {
		steps[i] = scripted.Text("done")
	}
	tdef := team.DefineTeam("racers", "Two teammates that take tasks by themselves", team.TeamSpec{
		Lead:       &swarm.Agent{Name: "lead", Instructions: "You add tasks."},
		Members:    []team.Teammate{{Name: "alice", Role: "coder", Prompt: "Take tasks."}, {Name: "bob", Role: "coder", Prompt: "Take tasks."}},
		Autonomous: true,
		MaxWakes:   rounds + 10,
	})
	return tdef, scripted.Script{"alice": steps, "bob": steps}
}

// raceForTasks adds rounds tasks one at a time to an autonomous team of
// two idle teammates, driven by the workers of two runtimes (nodes) on
// stores sa and sb, which share their data: both teammates wake for each
// task and try to claim it. Each task must have exactly one owner, the
// board's, which is the only teammate whose journal says it claimed it.
func raceForTasks(t *testing.T, sa, sb store.Store, rounds int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tdef, script := claimTeam(rounds)
	var rts []*swarm.Runtime
	for i, s := range []store.Store{sa, sb} {
		// A thousand tasks are more model calls than a run tree may make
		// by default.
		rt, err := swarm.New(swarm.Config{Store: s, Model: scripted.New(script, scripted.WithoutBookkeeping()),
			Owner: fmt.Sprint("node", i), Lease: 5 * time.Second, PollInterval: 20 * time.Millisecond, MaxModelCalls: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		if err := rt.Register(tdef); err != nil {
			t.Fatal(err)
		}
		rts = append(rts, rt)
	}
	tr, err := tdef.Start(ctx, rts[0], "", swarm.WithID("race"))
	if err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ctx, tr, 3)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, len(rts))
	for _, rt := range rts {
		go func() { done <- rt.Work(wctx, swarm.WorkOptions{}) }()
	}
	defer func() {
		stop()
		for range rts {
			<-done
		}
	}()
	for k := 1; k <= rounds; k++ {
		if _, err := tr.AddTask(ctx, fmt.Sprint("task ", k), ""); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, ctx, tr, 3)
		tasks, err := tr.Tasks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) != k || tasks[k-1].Owner == "" {
			t.Fatalf("round %d: task %+v has no owner once both teammates are idle", k, tasks[k-1])
		}
	}
	tasks, err := tr.Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claims := map[int64][]string{}
	for _, who := range []string{"alice", "bob"} {
		evs, err := rts[0].History(ctx, "race~"+who, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			var id int64
			if ev.Type == team.EventMember && strings.HasPrefix(ev.Message, "You claimed task #") {
				if _, err := fmt.Sscanf(ev.Message, "You claimed task #%d", &id); err != nil {
					t.Fatal(err)
				}
				claims[id] = append(claims[id], who)
			}
		}
	}
	wins := map[string]int{}
	for _, task := range tasks {
		who := claims[task.ID]
		if len(who) != 1 || who[0] != task.Owner || task.OwnerRun != "race~"+task.Owner {
			t.Fatalf("task %d: owned by %q (run %q), claimed by %v", task.ID, task.Owner, task.OwnerRun, who)
		}
		wins[task.Owner]++
	}
	t.Logf("%d tasks: alice won %d, bob %d", len(tasks), wins["alice"], wins["bob"])
}

// TestTeamTwoTeammatesRaceForTasks: two autonomous teammates, driven by
// two runtimes, race for each of 1,000 tasks (memory store; 200 on
// SQLite and PostgreSQL): exactly one owner each time.
func TestTeamTwoTeammatesRaceForTasks(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		s := memory.New()
		raceForTasks(t, s, s, claimRounds(false))
	})
	sqlStores(t, func(t *testing.T, url string) {
		ctx := t.Context()
		raceForTasks(t, openStore(t, ctx, url), openStore(t, ctx, url), claimRounds(true))
	})
}
