package team_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

// seedTeam is the team of seed 002's "Try it" prompts: a lead that spawns
// teammates by itself.
func seedTeam(opts ...func(*team.TeamSpec)) *team.Team {
	spec := team.TeamSpec{
		Lead: &swarm.Agent{Name: "lead", Instructions: "You lead a team. Spawn teammates and coordinate them through mail."},
	}
	for _, o := range opts {
		o(&spec)
	}
	return team.DefineTeam("crew", "A lead and the teammates it spawns", spec)
}

// seedScript plays the seed's prompts: spawn alice and bob, alice mails
// bob, bob reports to the lead, the lead reads its inbox, then broadcasts.
func seedScript() scripted.Script {
	return scripted.Script{
		"lead": {
			scripted.Tools(scripted.CallTool("spawn_teammate", map[string]string{"name": "bob", "role": "tester"})),
			scripted.Tools(scripted.CallTool("spawn_teammate", map[string]string{"name": "alice", "role": "coder", "prompt": "Send bob a message: the parser is ready for testing."})),
			scripted.Text("Spawned alice (coder) and bob (tester); alice is messaging bob."),
			scripted.Tools(scripted.CallTool("read_inbox", nil)),
			scripted.Text("bob reports: tests pass."),
			scripted.Tools(scripted.CallTool("broadcast", map[string]string{"content": "status update: phase 1 complete"})),
			scripted.Text("Broadcast sent."),
		},
		"alice": {
			scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": "bob", "content": "The parser is ready for testing."})),
			scripted.Text("Told bob."),
			scripted.Text("Noted the status update."),
		},
		// bob has no prompt: it starts idle, and calls its model only
		// when mail comes, however soon alice's comes.
		"bob": {
			scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": "lead", "content": "tests pass"})),
			scripted.Text("Tested the parser."),
			scripted.Text("Noted the status update."),
		},
	}
}

// until polls cond until it holds, failing the test with what if it does
// not in time (see swarmtest.Until).
func until(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	swarmtest.Until(t, ctx, what, func() error {
		if cond() {
			return nil
		}
		return swarmtest.Pending("not yet")
	})
}

// settledRoster waits until every member of tr is idle (or ended) and
// every teammate has read its mail, and returns the roster.
func settledRoster(t *testing.T, ctx context.Context, tr *team.TeamRun, names ...string) []team.MemberStatus {
	t.Helper()
	var ms []team.MemberStatus
	swarmtest.Until(t, ctx, "the team settles", func() error {
		var err error
		if ms, err = tr.Roster(ctx); err != nil {
			return err
		}
		switch {
		case len(ms) > len(names)+1:
			return fmt.Errorf("the team has more members than the lead and %v (members never leave the roster): %s", names, rosterText(ms))
		case len(ms) < len(names)+1:
			return swarmtest.Pending("%s", rosterText(ms))
		}
		for _, m := range ms {
			if m.State != team.MemberIdle && !m.Ended() || (!m.Lead && m.Unread > 0) {
				return swarmtest.Pending("%s", rosterText(ms))
			}
		}
		return nil
	})
	return ms
}

// received returns the mail member has consumed (journaled in its run)
// and what is still in its inbox.
func received(t *testing.T, rt *swarm.Runtime, tr *team.TeamRun, member string) []store.Mail {
	t.Helper()
	ms, err := tr.Roster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m team.MemberStatus) bool { return m.Name == member })
	if i < 0 {
		t.Fatalf("no member %s", member)
	}
	var out []store.Mail
	for _, ev := range swarmtest.Events(t, rt, ms[i].RunID) {
		if ev.Type == team.EventInbox {
			out = append(out, ev.Mails...)
		}
	}
	unread, err := tr.Inbox(context.Background(), member)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, unread...)
}

func states(ms []team.MemberStatus) string {
	var b []string
	for _, m := range ms {
		b = append(b, m.Name+"("+m.Role+"):"+m.State)
	}
	return strings.Join(b, " ")
}

// rosterText is states with each member's unread mail, to say where a
// team stands when a wait for it times out.
func rosterText(ms []team.MemberStatus) string {
	var b []string
	for _, m := range ms {
		b = append(b, fmt.Sprintf("%s:%s(%d unread)", m.Name, m.State, m.Unread))
	}
	return strings.Join(b, " ")
}

func TestTeamSeedScenario(t *testing.T) {
	ctx := ctxT(t)
	rt, m := swarmtest.NewRuntime(t, seedScript())
	tr, err := seedTeam().Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	reply, err := tr.Say(ctx, "Spawn alice (coder) and bob (tester). Have alice send bob a message.")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply, "Spawned alice") {
		t.Errorf("lead's reply = %q", reply)
	}
	ms := settledRoster(t, ctx, tr, "alice", "bob")
	if got, want := states(ms), "lead(lead):idle alice(coder):idle bob(tester):idle"; got != want {
		t.Errorf("roster = %s, want %s", got, want)
	}
	// bob was woken by alice's mail and reported to the lead (whose model
	// may have seen it already, if it came during the lead's turn).
	if got := received(t, rt, tr, "lead"); len(got) != 1 || got[0].From != "bob" || got[0].Content != "tests pass" {
		t.Fatalf("the lead received %+v, want bob's one message", got)
	}
	bobEvents := swarmtest.Events(t, rt, ms[2].RunID)
	var got []string
	for _, ev := range bobEvents {
		if ev.Type == team.EventInbox {
			for _, ml := range ev.Mails {
				got = append(got, ml.From+": "+ml.Content)
			}
		}
	}
	if want := []string{"alice: The parser is ready for testing."}; !slices.Equal(got, want) {
		t.Errorf("bob consumed %q, want %q", got, want)
	}
	if reply, err = tr.Say(ctx, "Check the lead inbox for any messages"); err != nil {
		t.Fatal(err)
	}
	if reply != "bob reports: tests pass." {
		t.Errorf("reply = %q", reply)
	}
	// The mail reached the lead's model once (with a request, or as
	// read_inbox's result) and is not delivered again.
	if inbox, _ := tr.Inbox(ctx, "lead"); len(inbox) != 0 {
		t.Errorf("lead's inbox after its turn = %+v", inbox)
	}
	var seen []string
	for _, ev := range swarmtest.Events(t, rt, tr.ID()) {
		for _, ml := range ev.Mails {
			seen = append(seen, string(ev.Type)+" "+ml.From+": "+ml.Content)
		}
	}
	if want := []string{"inbox bob: tests pass"}; !slices.Equal(seen, want) {
		t.Errorf("the lead consumed %q, want %q", seen, want)
	}
	if _, err = tr.Say(ctx, `Broadcast "status update: phase 1 complete" to all teammates`); err != nil {
		t.Fatal(err)
	}
	ms = settledRoster(t, ctx, tr, "alice", "bob")
	for _, name := range []string{"alice", "bob"} {
		run := ms[slices.IndexFunc(ms, func(m team.MemberStatus) bool { return m.Name == name })].RunID
		n := 0
		for _, ev := range swarmtest.Events(t, rt, run) {
			for _, ml := range ev.Mails {
				if ml.Type == team.MailBroadcast && ml.Content == "status update: phase 1 complete" {
					n++
				}
			}
		}
		if n != 1 {
			t.Errorf("%s consumed the broadcast %d times, want once", name, n)
		}
	}
	for _, mem := range ms {
		if left := m.Unconsumed(mem.RunID)[mem.Name]; left != 0 {
			t.Errorf("%s left %d steps of its script", mem.Name, left)
		}
	}
}

func TestTeamBadInput(t *testing.T) {
	ctx := ctxT(t)
	script := scripted.Script{
		"lead": {
			scripted.Tools(
				scripted.CallTool("spawn_teammate", map[string]string{"name": "alice", "role": "coder", "prompt": "Say hi."}),
			),
			scripted.Tools(
				scripted.CallTool("spawn_teammate", map[string]string{"name": "alice", "role": "tester", "prompt": "Again."}),
				scripted.CallTool("send_message", map[string]string{"to": "mallory", "content": "hi"}),
				scripted.CallTool("spawn_teammate", map[string]string{"name": "bad name!", "role": "x", "prompt": "x"}),
			),
			scripted.Text("done"),
		},
		"alice": {scripted.Text("hi")},
	}
	rt, _ := swarmtest.NewRuntime(t, script)
	tr, err := seedTeam().Start(ctx, rt, "Set up the team.")
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, ev := range swarmtest.Events(t, rt, tr.ID()) {
		if ev.Type == swarm.EventToolResult && ev.IsError {
			outs = append(outs, ev.Tool+": "+ev.Output)
		}
	}
	want := []string{"already has a teammate named alice", "no member named mallory", "may only have letters"}
	if len(outs) != len(want) {
		t.Fatalf("error results = %q, want %d", outs, len(want))
	}
	for _, w := range want {
		if !slices.ContainsFunc(outs, func(o string) bool { return strings.Contains(o, w) }) {
			t.Errorf("error results = %q, want one to say %q", outs, w)
		}
	}
	// The API refuses the same mistakes with typed errors.
	if _, err := tr.Send(ctx, "mallory", "hi"); !errors.Is(err, team.ErrNoMember) {
		t.Errorf("Send to an unknown member: %v, want ErrNoMember", err)
	}
	if _, err := tr.Send(ctx, "alice", strings.Repeat("x", store.MaxMailBytes+1)); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("oversize Send: %v, want ErrTooLarge", err)
	}
	if _, err := tr.Say(ctx, "  "); !errors.Is(err, swarm.ErrInvalidInput) {
		t.Errorf("empty Say: %v", err)
	}
	if _, err := team.Open(ctx, rt, "run_nope"); !errors.Is(err, swarm.ErrNotFound) {
		t.Errorf("Open of an unknown run: %v", err)
	}
	if err := rt.Register(team.DefineTeam("noleader", "", team.TeamSpec{})); !errors.Is(err, swarm.ErrInvalid) {
		t.Errorf("a team without a lead: %v, want ErrInvalid", err)
	}
	dup := team.TeamSpec{Lead: &swarm.Agent{Name: "lead"}, Members: []team.Teammate{{Name: "a", Prompt: "x"}, {Name: "a", Prompt: "y"}}}
	if err := rt.Register(team.DefineTeam("dup", "", dup)); !errors.Is(err, swarm.ErrDuplicate) {
		t.Errorf("two members with one name: %v, want ErrDuplicate", err)
	}
}

func TestTeamShutdownHandshake(t *testing.T) {
	ctx := ctxT(t)
	req := "team1/m1/t1/tool/call_lead_0_0" // the request id: the lead's call's idempotency key
	script := scripted.Script{
		"lead": {
			scripted.Tools(scripted.CallTool("shutdown_request", map[string]string{"teammate": "alice", "reason": "the work is done"})),
			scripted.Text("Asked alice to shut down."),
			scripted.Tools(scripted.CallTool("shutdown_request", map[string]string{"teammate": "alice"})),
			scripted.Text("alice is gone already."),
		},
		"alice": {
			scripted.Text("Ready."),
			scripted.Tools(scripted.CallTool("shutdown_response", map[string]any{"request_id": req, "approve": true})),
			scripted.Text("never asked: alice has shut down"),
		},
	}
	tdef := seedTeam(func(s *team.TeamSpec) {
		s.Members = []team.Teammate{{Name: "alice", Role: "coder", Prompt: "Say you are ready."}}
	})
	rt, _ := swarmtest.NewRuntime(t, script)
	tr, err := tdef.Start(ctx, rt, "", swarm.WithID("team1"))
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "alice")
	if _, err := tr.Say(ctx, "Shut alice down."); err != nil {
		t.Fatal(err)
	}
	ms := settledRoster(t, ctx, tr, "alice")
	if got := states(ms); got != "lead(lead):idle alice(coder):shutdown" {
		t.Fatalf("roster = %s", got)
	}
	st := swarmtest.AssertState(t, rt, "team1~alice", swarm.StateCompleted)
	if !strings.Contains(string(st.Result), "the work is done") {
		t.Errorf("alice's result = %s", st.Result)
	}
	reqs, err := tr.Requests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || reqs[0].ID != req || reqs[0].State != store.RequestApproved || reqs[0].From != "lead" || reqs[0].To != "alice" {
		t.Fatalf("requests = %+v", reqs)
	}
	if got := received(t, rt, tr, "lead"); len(got) != 1 || got[0].Type != team.MailShutdownResponse || got[0].ReplyTo != req {
		t.Errorf("the lead received %+v, want alice's shutdown_response", got)
	}
	// Asking a teammate that has shut down is an error to the lead.
	if _, err := tr.Say(ctx, "Shut alice down again."); err != nil {
		t.Fatal(err)
	}
	var last swarm.Event
	for _, ev := range swarmtest.Events(t, rt, "team1") {
		if ev.Type == swarm.EventToolResult {
			last = ev
		}
	}
	if !last.IsError || !strings.Contains(last.Output, "alice has already shutdown") {
		t.Errorf("second shutdown_request gave %q", last.Output)
	}
	if _, err := tr.Send(ctx, "alice", "are you there?"); !errors.Is(err, swarm.ErrInvalidState) {
		t.Errorf("mail to a teammate that shut down: %v, want ErrInvalidState", err)
	}
}

// deployTool is a teammate's tool that counts its runs in deploys.
func deployTool(deploys *atomic.Int64) swarm.Tool {
	return swarm.NewTool("deploy", "Deploy the service.", func(ctx context.Context, _ struct{}) (string, error) {
		deploys.Add(1)
		return "deployed", nil
	})
}

func TestTeamPlanApprovalGate(t *testing.T) {
	ctx := ctxT(t)
	var deploys atomic.Int64
	deploy := deployTool(&deploys)
	req := "team2~bob/c1/t2/tool/call_bob_1_0"
	script := scripted.Script{
		"lead": {
			scripted.Tools(scripted.CallTool("review_plan", map[string]any{"request_id": req, "approve": true, "feedback": "go ahead"})),
			scripted.Text("Approved bob's plan."),
		},
		"bob": {
			scripted.Tools(scripted.CallTool("deploy", nil)),
			scripted.Tools(scripted.CallTool("submit_plan", map[string]string{"plan": "deploy v2 behind a flag"})),
			scripted.Text("Plan submitted."),
			scripted.Tools(scripted.CallTool("deploy", nil)),
			scripted.Text("Deployed."),
		},
	}
	tdef := seedTeam(func(s *team.TeamSpec) {
		s.Members = []team.Teammate{{Name: "bob", Role: "ops", Prompt: "Deploy v2.", Tools: []swarm.Tool{deploy}, PlanApproval: true}}
	})
	rt, _ := swarmtest.NewRuntime(t, script)
	tr, err := tdef.Start(ctx, rt, "", swarm.WithID("team2"))
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "bob")
	if n := deploys.Load(); n != 0 {
		t.Fatalf("deploy ran %d times before the plan was approved", n)
	}
	var refused string
	for _, ev := range swarmtest.Events(t, rt, "team2~bob") {
		if ev.Type == swarm.EventToolResult && ev.Tool == "deploy" {
			refused = ev.Output
		}
	}
	if !strings.Contains(refused, "needs an approved plan") {
		t.Errorf("deploy before approval gave %q", refused)
	}
	reqs, _ := tr.Requests(ctx)
	if len(reqs) != 1 || reqs[0].State != store.RequestPending || reqs[0].Kind != team.ProtocolPlanApproval {
		t.Fatalf("requests = %+v, want bob's pending plan", reqs)
	}
	if _, err := tr.Say(ctx, "Review bob's plan."); err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "bob")
	if n := deploys.Load(); n != 1 {
		t.Errorf("deploy ran %d times after approval, want 1", n)
	}
	reqs, _ = tr.Requests(ctx)
	if reqs[0].State != store.RequestApproved || reqs[0].Response != "go ahead" {
		t.Errorf("request after review = %+v", reqs[0])
	}
}

func TestTeamTaskBoard(t *testing.T) {
	ctx := ctxT(t)
	script := scripted.Script{
		"alice": {
			scripted.Text("Waiting."),
			scripted.Tools(scripted.CallTool("complete_task", map[string]any{"task_id": 1, "result": "schema written"})),
			scripted.Text("Finished task 1."),
			scripted.Text("Finished task 2."),
		},
	}
	tdef := seedTeam(func(s *team.TeamSpec) {
		s.Autonomous = true
		s.Members = []team.Teammate{{Name: "alice", Role: "coder", Prompt: "Wait for tasks."}}
	})
	rt, _ := swarmtest.NewRuntime(t, script)
	tr, err := tdef.Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "alice")
	if _, err := tr.AddTask(ctx, "Write the schema", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AddTask(ctx, "Write the migration", "needs the schema", 1); err != nil {
		t.Fatal(err)
	}
	// alice claims task 1 by itself, completes it, which unblocks task 2,
	// which it claims next.
	var tasks []store.Task
	until(t, ctx, "both tasks are taken", func() bool {
		tasks, err = tr.Tasks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(tasks) == 2 && tasks[0].Status == store.TaskCompleted && tasks[1].Owner == "alice"
	})
	if tasks[0].Owner != "alice" || tasks[0].Result != "schema written" {
		t.Errorf("task 1 = %+v", tasks[0])
	}
	settledRoster(t, ctx, tr, "alice")
}

// blockingModel answers from script, except that it reports and blocks at
// one agent's call until its context ends.
type blockingModel struct {
	*scripted.Model
	agent   string
	call    int
	reached chan string // the last message of the blocked request
}

func (b *blockingModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req.Agent == b.agent && req.Call == b.call {
		b.reached <- req.Messages[len(req.Messages)-1].Content
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return b.Model.Generate(ctx, req)
}

// TestTeamMailRedeliveredAfterCrash kills bob's process after bob's model
// was given a mail but before that turn was journaled: the recovered bob
// gets the mail again and consumes it once.
func TestTeamMailRedeliveredAfterCrash(t *testing.T) {
	ctx := ctxT(t)
	script := scripted.Script{
		"bob": {scripted.Text("Ready."), scripted.Text("Tested it.")},
	}
	a, ks, bm, tdef, tr := startBob(t, ctx, script, "tester", "team3")
	if _, err := tr.Send(ctx, "bob", "please test the parser"); err != nil {
		t.Fatal(err)
	}
	seen := swarmtest.Recv(t, ctx, bm.reached, "bob's model call with the mail")
	if !strings.Contains(seen, "please test the parser") {
		t.Fatalf("bob's model was given %q", seen)
	}
	ks.Kill() // A dies before journaling bob's turn
	b, tr := recoverTeam(t, ctx, a, ks, tdef, script, "team3")
	settledRoster(t, ctx, tr, "bob")
	var consumed []string
	for _, ev := range swarmtest.Events(t, b, "team3~bob") {
		for _, ml := range ev.Mails {
			consumed = append(consumed, ml.Content)
		}
		if ev.Type == swarm.EventReply && ev.Key == "c2/reply" && ev.Text != "Tested it." {
			t.Errorf("bob's answer = %q", ev.Text)
		}
	}
	if want := []string{"please test the parser"}; !slices.Equal(consumed, want) {
		t.Errorf("bob consumed %q, want the mail once", consumed)
	}
	if inbox, _ := tr.Inbox(ctx, "bob"); len(inbox) != 0 {
		t.Errorf("bob's inbox after recovery = %+v", inbox)
	}
}

// startBob starts team id, whose one teammate bob (of role) waits for
// work, in a process A whose store can die and whose model, answering from
// script, blocks at bob's second call (see blockingModel).
func startBob(t *testing.T, ctx context.Context, script scripted.Script, role, id string) (*swarm.Runtime, *swarmtest.Killable, *blockingModel, *team.Team, *team.TeamRun) {
	t.Helper()
	tdef := seedTeam(func(s *team.TeamSpec) {
		s.Members = []team.Teammate{{Name: "bob", Role: role, Prompt: "Wait for work."}}
	})
	ks := swarmtest.NewKillable(t, memory.New())
	bm := &blockingModel{Model: scripted.New(script), agent: "bob", call: 1, reached: make(chan string, 1)}
	a, err := swarm.New(swarm.Config{Store: ks, Model: bm, Lease: 60 * time.Millisecond, Owner: "A"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	tr, err := tdef.Start(ctx, a, "", swarm.WithID(id))
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "bob")
	return a, ks, bm, tdef, tr
}

// recoverTeam closes runtime a, whose store ks is dead, waits for its
// leases to run out (a's lease must be under 80ms), and recovers team run
// id in a new runtime B on ks's data, with script.
func recoverTeam(t *testing.T, ctx context.Context, a *swarm.Runtime, ks *swarmtest.Killable, tdef *team.Team, script scripted.Script, id string) (*swarm.Runtime, *team.TeamRun) {
	t.Helper()
	a.Close()
	time.Sleep(80 * time.Millisecond) // A's lease runs out
	b, err := swarm.New(swarm.Config{Store: ks.Base(), Model: scripted.New(script), Lease: time.Second, Owner: "B", PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Register(tdef); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	tr, err := team.Open(ctx, b, id)
	if err != nil {
		t.Fatal(err)
	}
	return b, tr
}

// TestTeamWakesAreBounded: a teammate woken again and again (two
// teammates answering each other's mail would be) fails at MaxWakes with a
// reason instead of calling its model forever.
func TestTeamWakesAreBounded(t *testing.T) {
	ctx := ctxT(t)
	script := scripted.Script{"bob": {scripted.Text("one"), scripted.Text("two"), scripted.Text("three"), scripted.Text("four")}}
	tdef := seedTeam(func(s *team.TeamSpec) {
		s.MaxWakes = 2
		s.Members = []team.Teammate{{Name: "bob"}} // no prompt: idle until mail
	})
	rt, _ := swarmtest.NewRuntime(t, script)
	tr, err := tdef.Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	var ms []team.MemberStatus
	for i := range 3 {
		ms = settledRoster(t, ctx, tr, "bob")
		if ms[1].State != team.MemberIdle {
			t.Fatalf("before mail %d bob is %s (%s)", i+1, ms[1].State, ms[1].Reason)
		}
		if _, err := tr.Send(ctx, "bob", "again"); err != nil {
			t.Fatal(err)
		}
	}
	ms = settledRoster(t, ctx, tr, "bob")
	if ms[1].State != team.MemberFailed || !strings.Contains(ms[1].Reason, "reached its limit of 2 wakes") {
		t.Errorf("after 3 mails bob is %s (%s), want failed at its wake limit", ms[1].State, ms[1].Reason)
	}
	if st, _ := rt.Status(ctx, ms[1].RunID); st.Usage.Calls != 2 {
		t.Errorf("bob made %d model calls, want 2 (one per allowed wake)", st.Usage.Calls)
	}
}

// TestTeamBudgetIsOnePool: the team's budget is shared by the lead and
// every teammate.
func TestTeamBudgetIsOnePool(t *testing.T) {
	ctx := ctxT(t)
	script := scripted.Script{
		"alice": {scripted.Text("one"), scripted.Text("two"), scripted.Text("three")},
		"bob":   {scripted.Text("one"), scripted.Text("two"), scripted.Text("three")},
	}
	tdef := seedTeam(func(s *team.TeamSpec) {
		s.Members = []team.Teammate{{Name: "alice", Prompt: "Work."}, {Name: "bob", Prompt: "Work."}}
	})
	rt, _ := swarmtest.NewRuntime(t, script)
	tr, err := tdef.Start(ctx, rt, "", swarm.WithBudget(swarm.Budget{ModelCalls: 3}))
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "alice", "bob")
	for _, name := range []string{"alice", "bob"} {
		if _, err := tr.Send(ctx, name, "more"); err != nil {
			t.Fatal(err)
		}
	}
	ms := settledRoster(t, ctx, tr, "alice", "bob")
	var calls int64
	for _, m := range ms {
		st, err := rt.Status(ctx, m.RunID)
		if err != nil {
			t.Fatal(err)
		}
		calls += st.Usage.Calls
	}
	if calls != 3 {
		t.Errorf("the team made %d model calls under a budget of 3 (roster %s)", calls, states(ms))
	}
}

// TestTeamCloseStopsTeammatesAfterRestart: a lead continued by another
// process still stops its teammates when the team is closed mid-turn.
func TestTeamCloseStopsTeammatesAfterRestart(t *testing.T) {
	ctx := ctxT(t)
	script := scripted.Script{"alice": {scripted.Text("Ready.")}, "lead": {scripted.Text("never")}}
	tdef := seedTeam(func(s *team.TeamSpec) {
		s.Members = []team.Teammate{{Name: "alice", Role: "coder", Prompt: "Wait."}}
	})
	mem := memory.New()
	a, err := swarm.New(swarm.Config{Store: mem, Model: scripted.New(script)})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := tdef.Start(ctx, a, "", swarm.WithID("team4"))
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "alice")
	a.Close()

	bm := &blockingModel{Model: scripted.New(script), agent: "lead", call: 0, reached: make(chan string, 1)}
	b, err := swarm.New(swarm.Config{Store: mem, Model: bm})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Register(tdef); err != nil {
		t.Fatal(err)
	}
	if tr, err = team.Open(ctx, b, "team4"); err != nil {
		t.Fatal(err)
	}
	said := make(chan error, 1)
	go func() {
		_, err := tr.Say(ctx, "Plan the next phase.")
		said <- err
	}()
	swarmtest.Recv(t, ctx, bm.reached, "the lead's model call")
	if err := tr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	swarmtest.Recv(t, ctx, said, "Say to return")
	ms := settledRoster(t, ctx, tr, "alice")
	if got := states(ms); got != "lead(lead):stopped alice(coder):stopped" {
		t.Errorf("roster after Close = %s, want both stopped", got)
	}
}

// mailInTheWay is a store in which mail reaches a team's lead just before
// the first message sent to it.
type mailInTheWay struct {
	*memory.Store
	lead string
	once sync.Once
}

func (m *mailInTheWay) Send(ctx context.Context, id string, msg store.Message) (store.Message, error) {
	if id == m.lead && msg.Kind == store.MsgResume {
		m.once.Do(func() {
			_, _ = m.Post(ctx, []string{id}, store.Mail{ID: "early", From: "alice", Type: team.MailMessage, Content: "done early"})
		})
	}
	return m.Store.Send(ctx, id, msg)
}

// TestTeamMailLeavesTheLeadPaused: mail to a lead that waits for the
// user's next message (from an idle teammate that mail woke, or posted
// just before the user's message) leaves the lead paused as it was: no
// claim, no record. The user's message is taken at once, and the lead
// reads its mail at that turn, as an <inbox> message.
func TestTeamMailLeavesTheLeadPaused(t *testing.T) {
	ctx := ctxT(t)
	script := scripted.Script{
		"alice": {
			scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": "lead", "content": "the parser is done"})),
			scripted.Text("Told the lead."),
		},
		"lead": {scripted.Text("Noted alice's mails.")},
	}
	const id = "team-quiet"
	st := &mailInTheWay{Store: memory.New(), lead: id}
	rec := &recorder{m: scripted.New(script)}
	rt, err := swarm.New(swarm.Config{Store: st, Model: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tdef := seedTeam(func(s *team.TeamSpec) { s.Members = []team.Teammate{{Name: "alice", Role: "coder"}} })
	tr, err := tdef.Start(ctx, rt, "", swarm.WithID(id))
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "alice")
	before, err := st.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if before.State != store.Paused || before.Reason != swarm.AwaitingMessage {
		t.Fatalf("the lead before any mail: %s %q", before.State, before.Reason)
	}

	// The user's mail wakes idle alice, who mails the lead.
	if _, err := tr.Send(ctx, "alice", "Tell the lead when the parser is done."); err != nil {
		t.Fatal(err)
	}
	ms := settledRoster(t, ctx, tr, "alice")
	if ms[0].State != team.MemberIdle || ms[0].Unread != 1 {
		t.Fatalf("roster after alice's mail: %s, the lead with %d unread", states(ms), ms[0].Unread)
	}
	if got := received(t, rt, tr, "alice"); len(got) != 1 || got[0].From != team.UserSender {
		t.Fatalf("alice received %+v, want the user's mail", got)
	}
	after, err := st.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != store.Paused || after.Reason != swarm.AwaitingMessage || after.Owner != "" ||
		after.Epoch != before.Epoch || after.LastSeq != before.LastSeq {
		t.Fatalf("mail changed the lead's run: %s %q owner %q epoch %d last record %d; want paused, %q, unowned, epoch %d, last record %d",
			after.State, after.Reason, after.Owner, after.Epoch, after.LastSeq, swarm.AwaitingMessage, before.Epoch, before.LastSeq)
	}

	// More mail comes just before the user's message, which is taken at
	// the first try.
	reply, err := tr.Say(ctx, "Anything from alice?")
	if err != nil || reply != "Noted alice's mails." {
		t.Fatalf("Say = %q, %v", reply, err)
	}
	got := received(t, rt, tr, "lead")
	if len(got) != 2 || got[0].Content != "the parser is done" || got[1].Content != "done early" {
		t.Fatalf("the lead received %+v", got)
	}
	msgs := rec.last("lead").Messages
	inbox := msgs[len(msgs)-1].Content
	if !strings.HasPrefix(inbox, "<inbox>") || !strings.Contains(inbox, "the parser is done") || !strings.Contains(inbox, "done early") {
		t.Errorf("the lead's model was last given %q, want both mails in its inbox", inbox)
	}
	if m := msgs[len(msgs)-2].Content; m != "Anything from alice?" {
		t.Errorf("the lead's model was given %q before its inbox, want the user's message", m)
	}
}

// TestTeamOpenByAnyMemberRun: a team is found from its lead's run or a
// teammate's, whatever characters the team's run id has.
func TestTeamOpenByAnyMemberRun(t *testing.T) {
	ctx := ctxT(t)
	tdef := seedTeam(func(s *team.TeamSpec) { s.Members = []team.Teammate{{Name: "alice"}} })
	rt, _ := swarmtest.NewRuntime(t, nil)
	if _, err := tdef.Start(ctx, rt, "", swarm.WithID("crew~1")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"crew~1", "crew~1~alice"} {
		tr, err := team.Open(ctx, rt, id)
		if err != nil || tr.ID() != "crew~1" {
			t.Errorf("Open(%q) = %v, %v, want team crew~1", id, tr, err)
		}
	}
	if _, err := team.Open(ctx, rt, "crew"); !errors.Is(err, swarm.ErrNotFound) {
		t.Errorf("Open of a prefix: %v, want ErrNotFound", err)
	}
}

// TestTeamLeadFoundRunningPausesAgain: a lead whose row says running while
// its journal waits for the user (as a post of an earlier version, which
// woke every paused recipient, could leave it) is paused again when it is
// claimed, not released to be claimed again and again; the user's next
// message is then taken as usual.
func TestTeamLeadFoundRunningPausesAgain(t *testing.T) {
	ctx := ctxT(t)
	st := memory.New()
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(scripted.Script{"lead": {scripted.Text("Hello.")}})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := seedTeam().Start(ctx, rt, "", swarm.WithID("asleep")); err != nil {
		t.Fatal(err)
	}
	row, err := st.Get(ctx, "asleep")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.Read(ctx, "asleep", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		recs[i].Seq = 0
	}
	// The same journal under a row that is running and unowned.
	if _, err := st.Create(ctx, store.Run{ID: "woken", Swarm: row.Swarm, MaxTurns: row.MaxTurns}, "", time.Minute, recs); err != nil {
		t.Fatal(err)
	}
	if ids, err := rt.Recover(ctx); err != nil || !slices.Contains(ids, "woken") {
		t.Fatalf("Recover = %v, %v; want it to claim the woken lead", ids, err)
	}
	until(t, ctx, "the woken lead pauses again", func() bool {
		r, err := st.Get(ctx, "woken")
		return err == nil && r.State == store.Paused
	})
	if r, _ := st.Get(ctx, "woken"); r.Reason != swarm.AwaitingMessage || r.Owner != "" || r.LastSeq != row.LastSeq {
		t.Fatalf("the lead paused again as %+v; want reason %q, unowned, last record %d", r, swarm.AwaitingMessage, row.LastSeq)
	}
	tr, err := team.Open(ctx, rt, "woken")
	if err != nil {
		t.Fatal(err)
	}
	if reply, err := tr.Say(ctx, "Hi."); err != nil || reply != "Hello." {
		t.Fatalf("Say = %q, %v", reply, err)
	}
}
