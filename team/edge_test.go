package team_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/swarmtest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/team"
)

// claimKiller is a store that dies right after a task is claimed: the
// claim is stored, the journal record that follows it is not.
type claimKiller struct{ *swarmtest.Killable }

func (k claimKiller) ClaimTask(ctx context.Context, team string, id int64, member, ownerRun string) (store.Task, error) {
	t, err := k.Killable.ClaimTask(ctx, team, id, member, ownerRun)
	k.Kill()
	return t, err
}

// claimFailer is a store whose first append after a task is claimed
// fails: the claim is stored, the journal record that follows it is not,
// and the process lives on.
type claimFailer struct {
	swarmtest.FullStore
	claimed *atomic.Bool
}

func (k claimFailer) ClaimTask(ctx context.Context, team string, id int64, member, ownerRun string) (store.Task, error) {
	t, err := k.FullStore.ClaimTask(ctx, team, id, member, ownerRun)
	k.claimed.Store(true)
	return t, err
}

func (k claimFailer) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	if k.claimed.CompareAndSwap(true, false) {
		return 0, fmt.Errorf("append after a claim: %w", store.ErrUnavailable)
	}
	return k.FullStore.Append(ctx, l, recs, u)
}

// autoClaimTeam is an autonomous team of alice, who ships what she claims
// (counted in ships) and completes task 1, and its script.
func autoClaimTeam(ships *atomic.Int64) (*team.Team, scripted.Script) {
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
	return seedTeam(func(s *team.TeamSpec) {
		s.Autonomous = true
		s.Members = []team.Teammate{{Name: "alice", Role: "ops", Prompt: "Wait for tasks.", Tools: []swarm.Tool{ship}}}
	}), script
}

// shippedOnce waits until task 1 of tr is completed by alice, shipped
// once.
func shippedOnce(t *testing.T, ctx context.Context, tr *team.TeamRun, ships *atomic.Int64) {
	t.Helper()
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

// TestTeamAutoClaimRecoversAfterCrash: the process of an idle teammate of
// an autonomous team dies right after the teammate claims a task by
// itself, before its journal says so (or the append that says so fails).
// The recovered teammate takes up its own claim: the task is completed,
// its side effect done once.
func TestTeamAutoClaimRecoversAfterCrash(t *testing.T) {
	t.Run("crash", func(t *testing.T) {
		ctx := ctxT(t)
		var ships atomic.Int64
		tdef, script := autoClaimTeam(&ships)
		ks := swarmtest.NewKillable(t, memory.New())
		a, err := swarm.New(swarm.Config{Store: claimKiller{ks}, Model: scripted.New(script), Lease: 60 * time.Millisecond, Owner: "A"})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		tr, err := tdef.Start(ctx, a, "", swarm.WithID("autoclaim"))
		if err != nil {
			t.Fatal(err)
		}
		settledRoster(t, ctx, tr, "alice")
		if _, err := tr.AddTask(ctx, "Ship v2", ""); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, "alice claims task 1 and A dies", func() bool {
			tasks, err := tr.Tasks(ctx)
			return err == nil && len(tasks) == 1 && tasks[0].Owner == "alice" && ks.Dead()
		})
		_, tr = recoverTeam(t, ctx, a, ks, tdef, script, "autoclaim")
		shippedOnce(t, ctx, tr, &ships)
	})
	t.Run("failed append", func(t *testing.T) {
		ctx := ctxT(t)
		var ships atomic.Int64
		tdef, script := autoClaimTeam(&ships)
		rt, err := swarm.New(swarm.Config{Store: claimFailer{memory.New(), new(atomic.Bool)}, Model: scripted.New(script), Lease: 100 * time.Millisecond, Owner: "A", PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- rt.Work(wctx, swarm.WorkOptions{}) }()
		defer func() { stop(); <-done }()
		tr, err := tdef.Start(ctx, rt, "", swarm.WithID("autoclaim"))
		if err != nil {
			t.Fatal(err)
		}
		settledRoster(t, ctx, tr, "alice")
		if _, err := tr.AddTask(ctx, "Ship v2", ""); err != nil {
			t.Fatal(err)
		}
		shippedOnce(t, ctx, tr, &ships)
	})
}

// slowCreate is a store whose creation of run late waits until first
// (closed when a teammate's first model call starts) or a second passes:
// that teammate gets the chance to act before run late exists.
type slowCreate struct {
	swarmtest.FullStore
	late  string
	first chan struct{}
}

func (s *slowCreate) Create(ctx context.Context, r store.Run, owner string, lease time.Duration, recs []store.Record) (store.Lease, error) {
	if r.ID == s.late {
		select {
		case <-s.first:
		case <-time.After(time.Second):
		case <-ctx.Done():
			return store.Lease{}, ctx.Err()
		}
	}
	return s.FullStore.Create(ctx, r, owner, lease, recs)
}

// firstCall closes a channel when agent's first model call starts.
type firstCall struct {
	*scripted.Model
	agent string
	once  sync.Once
	ch    chan struct{}
}

func (f *firstCall) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req.Agent == f.agent {
		f.once.Do(func() { close(f.ch) })
	}
	return f.Model.Generate(ctx, req)
}

// TestTeamDeclaredMembersExistBeforeAnyStarts: the first declared
// teammate messages the last one at its first turn; the last one exists
// by then, however slowly its run is stored.
func TestTeamDeclaredMembersExistBeforeAnyStarts(t *testing.T) {
	ctx := ctxT(t)
	script := scripted.Script{
		"alice": {
			scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": "carol", "content": "hello carol"})),
			scripted.Text("Told carol."),
		},
		"carol": {scripted.Text("Got it.")},
	}
	tdef := seedTeam(func(s *team.TeamSpec) {
		s.Members = []team.Teammate{{Name: "alice", Prompt: "Greet carol."}, {Name: "bob"}, {Name: "carol"}}
	})
	first := make(chan struct{})
	st := &slowCreate{FullStore: memory.New(), late: "declared~carol", first: first}
	rt, err := swarm.New(swarm.Config{Store: st, Model: &firstCall{Model: scripted.New(script), agent: "alice", ch: first}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tr, err := tdef.Start(ctx, rt, "", swarm.WithID("declared"))
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "alice", "bob", "carol")
	evs, err := rt.History(ctx, "declared~alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == swarm.EventToolResult && ev.IsError {
			t.Errorf("alice's %s failed: %s", ev.Tool, ev.Output)
		}
	}
	if got := received(t, rt, tr, "carol"); len(got) != 1 || got[0].Content != "hello carol" {
		t.Errorf("carol received %+v, want alice's mail", got)
	}
}

// TestTeamReviewOfAMissingPlanRequest: the lead reviewing a plan request
// that does not exist gets an error result that says so, as
// ErrNoRequest.
func TestTeamReviewOfAMissingPlanRequest(t *testing.T) {
	ctx := ctxT(t)
	script := scripted.Script{"lead": {
		scripted.Tools(scripted.CallTool("review_plan", map[string]any{"request_id": "req-nope", "approve": true})),
		scripted.Text("No such plan."),
	}}
	rt, _ := swarmtest.NewRuntime(t, script)
	tr, err := seedTeam().Start(ctx, rt, "Approve the plan req-nope.", swarm.WithID("noplan"))
	if err != nil {
		t.Fatal(err)
	}
	var out string
	for _, ev := range swarmtest.Events(t, rt, tr.ID()) {
		if ev.Type == swarm.EventToolResult && ev.Tool == "review_plan" {
			out = ev.Output
		}
	}
	if want := `no pending plan approval request "req-nope" addressed to lead`; !strings.Contains(out, want) || strings.Contains(out, "run not found") {
		t.Errorf("review_plan of a missing request: %q, want it to say %q", out, want)
	}
}
