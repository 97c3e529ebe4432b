package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/strategy"
)

// memberStrategy drives a team member's run (see team.go) through the
// public seam (a [strategy.Strategy] on a [strategy.Driver]): pieces of work one after
// another, each woken by a message and ended by the member's text answer.
// The lead is woken by the user (a message sent to the team run, as in a
// conversation: step keys "m<n>/..."); a teammate by its prompt, then by
// mail or a task it claims (step keys "c<n>/..."). Before every model call
// the member's new mail is injected as an <inbox> user message (with the
// mails' parts) and
// consumed in the same append as the model's response (Step.AckMail), so
// a crash before that append delivers it again and a mail is never
// consumed twice. An idle teammate waits for mail with AwaitMail, holding
// no lease and no goroutine.
type memberStrategy struct {
	td     *teamDef
	lead   bool
	member Teammate
	team   string // the team run id (a teammate's; the lead's is its own)
}

// SnapshotKind names the member's checkpoints as before the seam.
func (memberStrategy) SnapshotKind() string { return "member" }

// LongLived: a team handles the user's messages, mail and tasks one after
// another, so its tree's call limits count per piece of that work (see
// strategy.LongLived). The model step that reads a user's mail, and the
// first of a piece of work on a task the user added, start a piece.
func (memberStrategy) LongLived() bool { return true }

// memberCheckpoint is a member's checkpoint, at the boundary before piece of
// work Next.
type memberCheckpoint struct {
	Next int             `json:"next"`
	Msgs []model.Message `json:"msgs,omitempty"`
	// Claims are the tasks the member's journal says it claimed.
	Claims []int64 `json:"claims,omitempty"`
}

// memberRun is the state of a member's run being driven.
type memberRun struct {
	d    *strategy.Driver
	tc   *teamCtx
	tb   store.Teams
	msgs []model.Message
	// pending holds events to journal with the next record (a piece of
	// work's answer, journaled with what follows it).
	pending []swarm.Event
	// userTask: the piece of work being opened is a task the user added,
	// which the next model step takes up as outside work.
	userTask bool
}

// fromUser reports whether t is a task the user added (TeamRun.AddTask):
// a member's task has its create_task call's idempotency key.
func fromUser(t *store.Task) bool { return t != nil && t.Key == "" }

// fromUserMail reports whether one of mails is from the user.
func fromUserMail(mails []store.Mail) bool {
	return slices.ContainsFunc(mails, func(m store.Mail) bool { return m.From == UserSender })
}

// Drive runs the member's pieces of work.
func (s memberStrategy) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	_, tb, err := teamStores(d.Runtime().Store())
	if err != nil {
		return nil, &strategy.Failure{Reason: err.Error()}
	}
	team := d.RunID()
	if !s.lead {
		team = s.team
	}
	tc := &teamCtx{d: d, rt: d.Runtime(), td: s.td, team: team, self: s.member.Name, lead: s.lead, member: s.member}
	ctx = context.WithValue(ctx, teamKey{}, tc)
	m := &memberRun{d: d, tc: tc, tb: tb}
	first := 1
	var st memberCheckpoint
	restored, err := d.Restore(&st)
	switch {
	case err != nil:
		return nil, err
	case restored:
		// Past the spawning of the declared teammates, too.
		m.msgs, first = st.Msgs, st.Next
		for _, id := range st.Claims {
			tc.noteClaim(id)
		}
	case s.lead:
		if err := m.spawnDeclared(ctx); err != nil {
			return nil, err
		}
	}
	if err := m.loadClaims(); err != nil {
		return nil, err
	}
	for n := first; ; n++ {
		m.msgs = d.Compacted(m.msgs)
		if n > 1 {
			// A boundary: the pieces of work before are answered.
			d.Checkpoint(ctx, m.prefix(n-1)+"/reply", memberCheckpoint{Next: n, Msgs: m.msgs, Claims: tc.claimed()})
		}
		opening, parts, err := m.wake(ctx, n)
		if err != nil {
			return nil, err
		}
		if n == 1 && !s.lead && strings.TrimSpace(opening) == "" {
			continue // spawned without a prompt: idle until mail comes
		}
		if res, err := m.work(ctx, n, opening, parts); res != nil || err != nil {
			return res, err
		}
	}
}

// prefix is the step key prefix of piece of work n.
func (m *memberRun) prefix(n int) string {
	if m.tc.lead {
		return "m" + strconv.Itoa(n)
	}
	return "c" + strconv.Itoa(n)
}

// spawnDeclared starts the team's declared teammates (once). All of them
// are stored (on the roster) before any is driven, so that the first can
// message the last at once.
func (m *memberRun) spawnDeclared(ctx context.Context) error {
	var children []strategy.Child
	var evs []swarm.Event
	for _, name := range m.tc.td.order {
		t := m.tc.td.members[name]
		key := "spawn/" + name
		if _, ok, err := m.d.RecordedEvent(key); err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		c, skip, err := m.tc.teammate(ctx, t.Name, t.Role, t.Prompt, m.d.RunID()+"/"+key)
		if err == nil && !skip {
			children = append(children, c)
		}
		if err != nil {
			return spawnFailed(ctx, name, err)
		}
		evs = append(evs, swarm.Event{Type: EventMember, Key: key, Agent: name, State: MemberSpawning, Target: memberRunID(m.d.RunID(), name)})
	}
	if err := m.tc.start(ctx, children...); err != nil {
		return spawnFailed(ctx, "", err)
	}
	return m.d.Journal(ctx, strategy.Entry{Events: evs})
}

// spawnFailed is the error of a declared teammate that could not be
// spawned: an interruption, or a failure of the team run.
func spawnFailed(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return strategy.Interrupted(err)
	}
	if name == "" {
		return &strategy.Failure{Reason: "spawn: " + err.Error()}
	}
	return &strategy.Failure{Reason: "spawn " + name + ": " + err.Error()}
}

// wake returns the opening message of piece of work n, and the parts a
// user's message to the lead carries, once the member has something to do, or the error that ends this drive (the member paused,
// idle or waiting for the user).
func (m *memberRun) wake(ctx context.Context, n int) (string, []model.Part, error) {
	d, key := m.d, m.prefix(n)
	if m.tc.lead {
		if task := m.leadTask(); n == 1 && task != "" {
			return task, nil, nil
		}
		return d.AwaitParts(ctx, key+"/await", strategy.Question{Reason: swarm.AwaitingMessage})
	}
	if n == 1 {
		var prompt string
		_ = json.Unmarshal(d.Input(), &prompt)
		return prompt, nil, nil
	}
	// Each wake is piece of work n; the first is the prompt's.
	limit := &strategy.Failure{Reason: fmt.Sprintf("teammate %s reached its limit of %d wakes", m.tc.self, m.tc.td.maxWakes)}
	over := n > m.tc.td.maxWakes+1
	for _, k := range []string{key + "/wake", key + "/await/resumed"} {
		ev, ok, err := d.RecordedEvent(k)
		switch {
		case err != nil:
			return "", nil, err
		case ok && over:
			return "", nil, limit
		case ok:
			m.userTask = fromUser(ev.Task)
			return ev.Message, nil, nil
		}
	}
	// Live: is there anything to do?
	opening, task, busy, err := m.work2do(ctx)
	if err != nil {
		return "", nil, err
	}
	_, idle, err := d.RecordedEvent(key + "/await")
	if err != nil {
		return "", nil, err
	}
	if busy && over {
		return "", nil, limit
	}
	evs := m.pending
	m.pending = nil
	if busy {
		m.userTask = fromUser(task)
		ev := swarm.Event{Type: EventMember, Key: key + "/wake", Agent: m.tc.self, State: MemberWorking, Message: opening, Task: task}
		if idle {
			ev.Type, ev.Key = swarm.EventResumed, key+"/await/resumed"
		}
		return opening, nil, d.Journal(ctx, strategy.Entry{Events: append(evs, ev), Working: true})
	}
	if !idle {
		evs = append(evs, swarm.Event{Type: EventMember, Key: key + "/idle", Agent: m.tc.self, State: MemberIdle})
	}
	return "", nil, d.AwaitMail(ctx, key+"/await", evs...)
}

// leadTask is the lead's first task: its run's input, if any.
func (m *memberRun) leadTask() string {
	var task string
	_ = json.Unmarshal(m.d.Input(), &task)
	return task
}

// work2do reports whether an idle teammate has work: mail (delivered as
// its inbox at the next model call), or, in an autonomous team, a task of
// the board it claims (see claimNext).
func (m *memberRun) work2do(ctx context.Context) (opening string, task *store.Task, busy bool, err error) {
	mails, err := m.d.Mailbox(ctx, 1)
	if err != nil {
		return "", nil, false, err
	}
	if len(mails) > 0 {
		return "", nil, true, nil
	}
	opening, task, err = m.claimNext(ctx)
	return opening, task, opening != "", err
}

// claimed returns the task piece of work key claimed when it was woken
// without mail: as recorded, or claimed now (and recorded).
func (m *memberRun) claimed(ctx context.Context, key string) (string, error) {
	if ev, ok, err := m.d.RecordedEvent(key + "/claim"); err != nil || ok {
		m.userTask = fromUser(ev.Task)
		return ev.Message, err
	}
	opening, task, err := m.claimNext(ctx)
	if err != nil || opening == "" {
		return "", err
	}
	m.userTask = fromUser(task)
	ev := swarm.Event{Type: EventMember, Key: key + "/claim", Agent: m.tc.self, State: MemberWorking, Message: opening, Task: task}
	return opening, m.d.Journal(ctx, strategy.Entry{Events: []swarm.Event{ev}})
}

// claimNext returns, in an autonomous team, the task the member works on
// next and the message that puts it to work on it ("" if none). That is
// first a task the member owns, in progress, that its journal does not
// say it claimed: a claim stored before a crash (or a failed append) kept
// its record from the journal, and is taken up now, as a claim_task call
// replayed after a crash would be. Else it is the first task of the board
// that is pending, unowned and unblocked, which it claims. The task is
// returned to be journaled with the message (which accounts for it).
func (m *memberRun) claimNext(ctx context.Context) (string, *store.Task, error) {
	if !m.tc.td.autonomous || m.tc.lead {
		return "", nil, nil
	}
	tasks, err := m.tb.Tasks(ctx, m.tc.team)
	if err != nil {
		return "", nil, strategy.Interrupted(err)
	}
	if t, ok := m.tc.unaccounted(tasks); ok {
		m.tc.noteClaim(t.ID)
		return claimMessage(t), &t, nil
	}
	done := map[int64]bool{}
	for _, t := range tasks {
		done[t.ID] = t.Status == store.TaskCompleted
	}
	for _, t := range tasks {
		if t.Status != store.TaskPending || t.Owner != "" || !allDone(t.BlockedBy, done) {
			continue
		}
		got, err := m.tb.ClaimTask(ctx, m.tc.team, t.ID, m.tc.self, m.d.RunID())
		if err != nil {
			if isStoreUnavailable(err) {
				return "", nil, strategy.Interrupted(err)
			}
			continue // another teammate was faster
		}
		m.tc.noteClaim(got.ID)
		return claimMessage(got), &got, nil
	}
	return "", nil, nil
}

// claimMessage puts a member to work on task t, which it claimed.
func claimMessage(t store.Task) string {
	return fmt.Sprintf("You claimed task #%d from the team's task board: %s\n%s\nWork on it, then call complete_task with its id and your result.", t.ID, t.Subject, t.Description)
}

// loadClaims notes the tasks the member's journal (as loaded) says it
// claimed: by claim_task or by itself.
func (m *memberRun) loadClaims() error {
	evs, err := m.d.Journaled(EventTask, EventMember)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if ev.Task != nil && ev.Task.Status == store.TaskInProgress {
			m.tc.noteClaim(ev.Task.ID)
		}
	}
	return nil
}

func allDone(ids []int64, done map[int64]bool) bool {
	for _, id := range ids {
		if !done[id] {
			return false
		}
	}
	return true
}

func isStoreUnavailable(err error) bool { return errors.Is(err, store.ErrUnavailable) }

// work runs piece of work n: the member's tool-calling loop on opening (with
// parts, a user's attachments to the lead) and
// its mail, until its model answers with text. It returns the run's
// result when the member shut down, or the error that ends the drive; nil
// and nil go on to the next piece of work.
func (m *memberRun) work(ctx context.Context, n int, opening string, parts []model.Part) (json.RawMessage, error) {
	d, key, name, maxTurns := m.d, m.prefix(n), m.tc.self, m.tc.td.maxTurns
	if m.tc.lead && (n > 1 || m.leadTask() == "") {
		// A user message (the run's input was checked as such): a
		// rejected one is answered with the rejection and left out of
		// the lead's history.
		rejection, err := d.CheckInput(ctx, key, opening)
		if err != nil {
			return nil, err
		}
		if rejection != "" {
			return nil, m.answer(ctx, n, 0, "", rejection)
		}
	}
	if opening != "" || len(parts) > 0 {
		m.msgs = append(m.msgs, model.Message{Role: model.RoleUser, Content: opening, Parts: parts})
	}
	for turn := 1; ; turn++ {
		if turn > maxTurns {
			return nil, m.answer(ctx, n, turn-1, "", fmt.Sprintf("%s gave no answer within its max turns (%d)", name, maxTurns))
		}
		tkey := key + "/t" + strconv.Itoa(turn)
		x := strategy.Step{}
		_, replayed, err := d.RecordedEvent(tkey + "/model")
		if err != nil {
			return nil, err
		}
		if _, ended, _ := d.RecordedEvent(key + "/reply"); ended && !replayed {
			return nil, nil
		}
		inbox, ok, err := d.RecordedEvent(tkey + "/inbox")
		switch {
		case err != nil:
			return nil, err
		case ok:
			m.msgs = append(m.msgs, inboxMessage(inbox.Mails))
		case !replayed:
			mails, err := d.Mailbox(ctx, maxInbox)
			if err != nil {
				return nil, err
			}
			if len(mails) > 0 {
				m.msgs = append(m.msgs, inboxMessage(mails))
				x.Events = []swarm.Event{{Type: EventInbox, Key: tkey + "/inbox", Agent: name, Mails: mails}}
				x.AckMail = mails[len(mails)-1].Seq
				x.Outside = fromUserMail(mails)
			}
		}
		if turn == 1 && (len(m.msgs) == 0 || m.msgs[len(m.msgs)-1].Role != model.RoleUser) {
			// Woken with no mail (to look at the task board, say).
			task, err := m.claimed(ctx, key)
			if err != nil {
				return nil, err
			}
			if task == "" {
				return nil, m.answer(ctx, n, 0, "", "woken with nothing to do")
			}
			m.msgs = append(m.msgs, model.Message{Role: model.RoleUser, Content: task})
		}
		if len(m.pending) > 0 {
			x.Events = append(m.pending, x.Events...)
			m.pending = nil
		}
		if m.userTask {
			x.Outside, m.userTask = true, false
		}
		resp, err := d.AtTurn(turn).ModelStep(ctx, tkey, m.msgs, x)
		if err != nil {
			var f *strategy.Failure
			if errors.As(err, &f) && !f.Ends() {
				// The model failed (after its retries): the piece of
				// work ends with the failure.
				return nil, m.answer(ctx, n, turn, "", f.Reason)
			}
			return nil, err
		}
		m.msgs = append(m.msgs, resp.Message)
		calls := resp.Message.ToolCalls
		if len(calls) == 0 {
			return nil, m.answer(ctx, n, turn, resp.Message.Content, "")
		}
		// The member's tools may forward the parts it has (send_message's
		// attach) and a child swarm it hands off to sees them.
		results, err := d.AtTurn(turn).Round(strategy.WithConversationParts(ctx, m.msgs), tkey, calls)
		if err != nil {
			return nil, err
		}
		for i, c := range calls {
			m.msgs = append(m.msgs, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: results[i].Output, IsError: results[i].IsError, Parts: results[i].Parts})
		}
		reason, ok, err := m.shutdownApproved(tkey, calls)
		if err != nil {
			return nil, err
		}
		if ok {
			if _, err := m.tb.ReleaseTasks(ctx, m.tc.team, d.RunID()); err != nil {
				return nil, strategy.Interrupted(err)
			}
			return json.Marshal("shut down: " + reason)
		}
	}
}

// maxInbox bounds the mails injected at one model call; the rest come at
// the next.
const maxInbox = 100

// answer ends piece of work n with the member's text (or a failure). The
// lead's answer is its reply to the user, journaled with the pause that
// awaits the next message (the drive then ends: ErrAwaiting); a
// teammate's is journaled with what it does next (goes idle, or works
// on), and nil goes on.
func (m *memberRun) answer(ctx context.Context, n, turn int, text, failure string) error {
	key := m.prefix(n) + "/reply"
	if _, ok, err := m.d.RecordedEvent(key); err != nil || ok {
		return err
	}
	reply := swarm.Event{Type: swarm.EventReply, Key: key, Agent: m.tc.self, Text: text, Turn: turn, IsError: failure != "", Reason: failure}
	if !m.tc.lead {
		m.pending = append(m.pending, reply)
		return nil
	}
	evs := []swarm.Event{reply, {Type: swarm.EventPaused, Key: m.prefix(n+1) + "/await", Agent: m.tc.self, Reason: swarm.AwaitingMessage}}
	if err := m.d.Journal(ctx, strategy.Entry{Events: evs, Waiting: swarm.AwaitingMessage}); err != nil {
		return err
	}
	return strategy.ErrAwaiting
}

// shutdownApproved reports whether one of calls (of round tkey) approved a
// shutdown request, live or as recorded, and the request's reason.
func (m *memberRun) shutdownApproved(tkey string, calls []model.ToolCall) (string, bool, error) {
	if m.tc.lead {
		return "", false, nil
	}
	for _, c := range calls {
		if c.Name != toolShutdownResponse {
			continue
		}
		ev, ok, err := m.d.RecordedEvent(tkey + "/tool/" + c.ID + "/protocol")
		switch {
		case err != nil:
			return "", false, err
		case !ok:
			if reason := m.tc.takeShutdown(tkey + "/tool/" + c.ID); reason != "" {
				return reason, true, nil
			}
		case ev.Protocol != nil && ev.Protocol.Kind == ProtocolShutdown && ev.Protocol.State == store.RequestApproved:
			return ev.Protocol.Content, true, nil
		}
	}
	return "", false, nil
}
