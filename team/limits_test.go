package team_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/team"
)

// relay is a team of idle teammates a, b, c, d: each passes the mail it
// gets on to the next, and d answers.
func relay() *team.Team {
	var members []team.Teammate
	for _, n := range []string{"a", "b", "c", "d"} {
		members = append(members, team.Teammate{Name: n, Role: "relay"})
	}
	return team.DefineTeam("relay", "Passes mail on", team.TeamSpec{Lead: &swarm.Agent{Name: "lead", Instructions: "Lead."}, Members: members})
}

// relayScript plays n relays: a, b and c each send one mail on and
// answer (two model calls and a tool call), d answers.
func relayScript(n int) scripted.Script {
	s := scripted.Script{}
	next := map[string]string{"a": "b", "b": "c", "c": "d"}
	for range n {
		for from, to := range next {
			s[from] = append(s[from],
				scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": to, "content": "pass it on"})),
				scripted.Text("passed on"))
		}
		s["d"] = append(s["d"], scripted.Text("got it"))
	}
	return s
}

// A team is one run tree for its whole life: with call limits over that
// life, a team that relays mail ends failed once it has relayed enough,
// however healthy. Its limits count per piece of outside work instead:
// each user's mail gets the limits afresh, so twelve relays of seven model
// calls and three tool calls each complete under limits of 20 and 10.
func TestLimitsCountPerUserMail(t *testing.T) {
	const relays = 12
	ctx := ctxT(t)
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(relayScript(relays)), MaxModelCalls: 20, MaxToolCalls: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tr, err := relay().Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range relays {
		if _, err := tr.Send(ctx, "a", fmt.Sprintf("relay %d", i)); err != nil {
			t.Fatal(err)
		}
		for _, m := range settledRoster(t, ctx, tr, "a", "b", "c", "d") {
			if m.State != team.MemberIdle {
				t.Fatalf("after relay %d: %s %s: %s", i, m.Name, m.State, m.Reason)
			}
		}
	}
	if got := len(received(t, rt, tr, "d")); got != relays {
		t.Errorf("d consumed %d mails, want %d", got, relays)
	}
	u, err := rt.TreeUsage(ctx, tr.ID())
	if err != nil {
		t.Fatal(err)
	}
	if u.Calls != 7*relays {
		t.Errorf("%d model calls in the tree, want %d: more than the limit of 20 over its life", u.Calls, 7*relays)
	}
}

// A runaway in a long-lived tree is still stopped at the limit: a team
// lead that hands off to an agent handing off to itself makes exactly the
// default number of model calls, and the team pauses at the cap instead of
// failing, with a reason that names it.
func TestLimitsStopARunawayInATeam(t *testing.T) {
	writer := &swarm.Agent{Name: "writer", Instructions: "write"}
	writer.Handoffs = []swarm.Handoff{swarm.ToAgent(writer)}
	lead := &swarm.Agent{Name: "lead", Instructions: "Lead.", Handoffs: []swarm.Handoff{swarm.ToAgent(writer)}}
	script := scripted.Script{"lead": {scripted.Tools(scripted.CallTool("handoff_to_writer", map[string]any{"request": "go"}))}}
	for range swarm.DefaultMaxModelCalls + 100 {
		script["writer"] = append(script["writer"], scripted.Tools(scripted.CallTool("handoff_to_writer", map[string]any{"request": "once more"})))
	}
	var calls atomic.Int64
	m := countingModel{Model: scripted.New(script, scripted.WithoutBookkeeping()), n: &calls}
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m, MaxDepth: swarm.DefaultMaxModelCalls + 100})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := ctxT(t)
	tr, err := team.DefineTeam("loop", "Loops", team.TeamSpec{Lead: lead}).Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Say(ctx, "go"); err == nil {
		t.Fatal("the runaway answered")
	}
	st, err := tr.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("call cap reached: model calls %d of %d", swarm.DefaultMaxModelCalls, swarm.DefaultMaxModelCalls)
	if st.State != swarm.StatePaused || !strings.HasPrefix(st.Reason, want) {
		t.Fatalf("team %s %q, want paused with %q", st.State, st.Reason, want)
	}
	if n := calls.Load(); n != swarm.DefaultMaxModelCalls {
		t.Errorf("%d model calls, want the limit, %d", n, swarm.DefaultMaxModelCalls)
	}
}

// countingModel counts the requests that reach a model.
type countingModel struct {
	model.Model
	n *atomic.Int64
}

func (m countingModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.n.Add(1)
	return m.Model.Generate(ctx, req)
}

// A teammate that reaches the tree's cap pauses with a reason naming it:
// the mail sent to it meanwhile stays unread and the task added stays
// pending. A resume gives the tree as many calls again: the teammate
// finishes its work, reading the mail at its next model call, then takes
// the task.
func TestLimitsCapPausesKeepsMailAndResumes(t *testing.T) {
	ctx := ctxT(t)
	var echoes atomic.Int64
	echo := swarm.NewTool("echo", "echoes", func(_ context.Context, in struct{ N int }) (int, error) {
		echoes.Add(1)
		return in.N, nil
	})
	var steps []scripted.Step
	for i := range 5 {
		steps = append(steps, scripted.Tools(scripted.CallTool("echo", map[string]any{"N": i})))
	}
	steps = append(steps,
		scripted.Text("echoed five times"), // the later mail comes with a call of this piece of work
		scripted.Tools(scripted.CallTool("complete_task", map[string]any{"task_id": 1, "result": "done"})),
		scripted.Text("did the task"))
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{"a": steps}), MaxToolCalls: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tm := team.DefineTeam("capped", "Echoes", team.TeamSpec{
		Lead: &swarm.Agent{Name: "lead", Instructions: "Lead."}, Autonomous: true,
		Members: []team.Teammate{{Name: "a", Role: "echo", Tools: []swarm.Tool{echo}}},
	})
	tr, err := tm.Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Send(ctx, "a", "echo five times"); err != nil {
		t.Fatal(err)
	}
	capped := func() team.MemberStatus {
		var a team.MemberStatus
		until(t, ctx, "a pauses at the cap", func() bool {
			ms, err := tr.Roster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			a = ms[1]
			return a.Ended() || strings.Contains(a.Reason, "tool calls 3 of 3")
		})
		return a
	}
	a := capped()
	st, err := rt.Status(ctx, a.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != swarm.StatePaused || !strings.HasPrefix(st.Reason, "call cap reached: tool calls 3 of 3") {
		t.Fatalf("a: %s %q, want paused at the cap", st.State, st.Reason)
	}
	if _, err := tr.Send(ctx, "a", "and this too", team.WithMailID("later")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AddTask(ctx, "a task", ""); err != nil {
		t.Fatal(err)
	}
	unread, err := tr.Inbox(ctx, "a")
	if err != nil || len(unread) != 1 || unread[0].ID != "later" {
		t.Fatalf("a's inbox while paused: %+v %v, want the later mail", unread, err)
	}
	if tasks, err := tr.Tasks(ctx); err != nil || tasks[0].Status != store.TaskPending {
		t.Fatalf("tasks while a is paused: %+v %v", tasks, err)
	}
	if err := rt.Resume(ctx, a.RunID, "go on"); err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "a")
	if n := echoes.Load(); n != 5 {
		t.Errorf("%d echoes, want 5, each once", n)
	}
	got := received(t, rt, tr, "a")
	if len(got) != 2 || got[1].ID != "later" {
		t.Errorf("a consumed %+v, want both mails", got)
	}
	if tasks, err := tr.Tasks(ctx); err != nil || tasks[0].Status != store.TaskCompleted {
		t.Errorf("tasks after the resume: %+v %v, want the task completed", tasks, err)
	}
}

// Every member that paused at the tree's cap continues after one resume:
// a and b each pause at the cap of 3 tool calls (each user's mail starts a
// piece of work of its own); resuming a gives the tree 3 calls again and
// resumes b too, and both finish their fourth echo.
func TestLimitsOneResumeContinuesEveryMemberAtTheCap(t *testing.T) {
	ctx := ctxT(t)
	echo := swarm.NewTool("echo", "echoes", func(_ context.Context, in struct{ N int }) (int, error) { return in.N, nil })
	var steps []scripted.Step
	for i := range 4 {
		steps = append(steps, scripted.Tools(scripted.CallTool("echo", map[string]any{"N": i})))
	}
	steps = append(steps, scripted.Text("echoed four times"))
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{"a": steps, "b": steps}), MaxToolCalls: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tm := team.DefineTeam("pair", "Echoes", team.TeamSpec{
		Lead:    &swarm.Agent{Name: "lead", Instructions: "Lead."},
		Members: []team.Teammate{{Name: "a", Role: "echo", Tools: []swarm.Tool{echo}}, {Name: "b", Role: "echo", Tools: []swarm.Tool{echo}}},
	})
	tr, err := tm.Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	var ms []team.MemberStatus
	for i, name := range []string{"a", "b"} {
		if _, err := tr.Send(ctx, name, "echo four times"); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, name+" pauses at the cap", func() bool {
			if ms, err = tr.Roster(ctx); err != nil {
				t.Fatal(err)
			}
			return ms[i+1].Ended() || strings.HasPrefix(ms[i+1].Reason, "call cap reached: tool calls 3 of 3")
		})
		if ms[i+1].Ended() {
			t.Fatalf("%s: %s %s", name, ms[i+1].State, ms[i+1].Reason)
		}
	}
	if err := rt.Resume(ctx, ms[1].RunID, "go on"); err != nil {
		t.Fatal(err)
	}
	for _, m := range settledRoster(t, ctx, tr, "a", "b") {
		if m.State != team.MemberIdle {
			t.Errorf("%s: %s %s", m.Name, m.State, m.Reason)
		}
	}
}
