package team_test

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/team"
)

// restartTeam: alice takes tasks and reports to the lead; bob needs an
// approved plan before it deploys.
func restartTeam(deploys *atomic.Int64) *team.Team {
	deploy := deployTool(deploys)
	return team.DefineTeam("restart", "A team that outlives its processes", team.TeamSpec{
		Lead: &swarm.Agent{Name: "lead", Instructions: "You lead alice and bob."},
		Members: []team.Teammate{
			{Name: "alice", Role: "coder", Prompt: "Wait for work."},
			{Name: "bob", Role: "ops", Prompt: "Plan the deploy of v2.", Tools: []swarm.Tool{deploy}, PlanApproval: true},
		},
	})
}

// restartScript is the team's script; the lead's calls come after the
// restart, so they name bob's request by its id.
func restartScript(planID string) scripted.Script {
	return scripted.Script{
		"lead": {
			scripted.Tools(scripted.CallTool("review_plan", map[string]any{"request_id": planID, "approve": true, "feedback": "go ahead"})),
			scripted.Text("Approved bob's plan; alice is on task 1."),
		},
		"alice": {
			scripted.Text("Waiting."),
			scripted.Tools(scripted.CallTool("claim_task", map[string]any{"task_id": 1})),
			scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": "lead", "content": "I took task 1"})),
			scripted.Text("Working on task 1."),
		},
		"bob": {
			scripted.Tools(scripted.CallTool("submit_plan", map[string]string{"plan": "deploy v2 behind a flag"})),
			scripted.Text("Plan submitted."),
			scripted.Tools(scripted.CallTool("deploy", nil)),
			scripted.Text("Deployed."),
		},
	}
}

// teamSnapshot is what a restart must keep of a team.
type teamSnapshot struct {
	Roster   []team.MemberStatus
	Cursors  map[string]int64
	Unread   map[string][]string // mail ids
	Requests []store.Request
	Tasks    []store.Task
}

func snapshot(t *testing.T, ctx context.Context, rt *swarm.Runtime, tr *team.TeamRun) teamSnapshot {
	t.Helper()
	var s teamSnapshot
	var err error
	if s.Roster, err = tr.Roster(ctx); err != nil {
		t.Fatal(err)
	}
	s.Cursors, s.Unread = map[string]int64{}, map[string][]string{}
	mb := rt.Store().(store.Mailboxes)
	for _, m := range s.Roster {
		mails, cursor, err := mb.Mailbox(ctx, m.RunID, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.Cursors[m.Name] = cursor
		for _, ml := range mails {
			s.Unread[m.Name] = append(s.Unread[m.Name], ml.ID)
		}
	}
	if s.Requests, err = tr.Requests(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Tasks, err = tr.Tasks(ctx); err != nil {
		t.Fatal(err)
	}
	// Times come back from the database at its precision.
	for i := range s.Requests {
		s.Requests[i].CreatedAt, s.Requests[i].UpdatedAt, s.Requests[i].Deadline = time.Time{}, time.Time{}, s.Requests[i].Deadline.Truncate(time.Millisecond)
	}
	for i := range s.Tasks {
		s.Tasks[i].CreatedAt, s.Tasks[i].UpdatedAt = time.Time{}, time.Time{}
	}
	return s
}

// TestTeamRestartRestoresEverything: a team runs in runtime A until it
// has a task claimed, a pending plan approval and unread mail; A and its
// store handle close; B opens the same SQLite file (or PostgreSQL schema)
// and finds the roster, mailbox cursors, unread mail, pending request and
// task claim as they were, then carries the conversation on.
func TestTeamRestartRestoresEverything(t *testing.T) {
	sqlStores(t, func(t *testing.T, url string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var deploys atomic.Int64
		def := restartTeam(&deploys)

		sa, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		a, err := swarm.New(swarm.Config{Store: sa, Model: scripted.New(restartScript("")), Owner: "A", Lease: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := def.Start(ctx, a, "", swarm.WithID("rs"))
		if err != nil {
			t.Fatal(err)
		}
		waitIdle(t, ctx, tr, 3)
		if _, err := tr.AddTask(ctx, "Write the parser", "in Go"); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Send(ctx, "alice", "Take task 1 and tell the lead."); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, ctx, tr, 3)
		before := snapshot(t, ctx, a, tr)
		if got := len(before.Unread["lead"]); got != 2 {
			t.Fatalf("the lead has %d unread mails before the restart, want alice's and bob's plan", got)
		}
		if len(before.Requests) != 1 || before.Requests[0].State != store.RequestPending || before.Requests[0].Kind != team.ProtocolPlanApproval {
			t.Fatalf("requests before the restart = %+v", before.Requests)
		}
		if len(before.Tasks) != 1 || before.Tasks[0].Owner != "alice" || before.Tasks[0].Status != store.TaskInProgress {
			t.Fatalf("tasks before the restart = %+v", before.Tasks)
		}
		if before.Cursors["alice"] != 1 || before.Cursors["lead"] != 0 {
			t.Fatalf("cursors before the restart = %v", before.Cursors)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if err := sa.Close(); err != nil {
			t.Fatal(err)
		}

		sb := openStore(t, ctx, url)
		b, err := swarm.New(swarm.Config{Store: sb, Model: scripted.New(restartScript(before.Requests[0].ID)), Owner: "B", Lease: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if err := b.Register(def); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		if tr, err = team.Open(ctx, b, "rs"); err != nil {
			t.Fatal(err)
		}
		if after := snapshot(t, ctx, b, tr); !reflect.DeepEqual(after, before) {
			t.Fatalf("after the restart:\n%+v\nwant\n%+v", after, before)
		}
		reply, err := tr.Say(ctx, "Review bob's plan.")
		if err != nil {
			t.Fatal(err)
		}
		if reply != "Approved bob's plan; alice is on task 1." {
			t.Errorf("the lead's reply = %q", reply)
		}
		ms := waitIdle(t, ctx, tr, 3)
		if n := deploys.Load(); n != 1 {
			t.Errorf("bob deployed %d times after the approval, want once", n)
		}
		reqs, err := tr.Requests(ctx)
		if err != nil || reqs[0].State != store.RequestApproved || reqs[0].Response != "go ahead" {
			t.Errorf("requests after the review = %+v, %v", reqs, err)
		}
		// The lead consumed the mail that waited through the restart,
		// once, at its first model call in B.
		got, calls := consumed(t, ctx, b, ms[0].RunID)
		if calls != 1 || len(got) != 2 || !reflect.DeepEqual([]string{got[0].ID, got[1].ID}, before.Unread["lead"]) {
			t.Errorf("the lead consumed %+v in %d calls, want %v once", got, calls, before.Unread["lead"])
		}
		if tasks, _ := tr.Tasks(ctx); tasks[0].OwnerRun != "rs~alice" {
			t.Errorf("task 1 after the restart = %+v", tasks[0])
		}
	})
}
