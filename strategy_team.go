package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// memberStrategy drives a team member's run (see team.go): pieces of work
// one after another, each woken by a message and ended by the member's
// text answer. The lead is woken by the user (a message sent to the team
// run, as in a conversation: step keys "m<n>/..."); a teammate by its
// prompt, then by mail or a task it claims (step keys "c<n>/..."). Before
// every model call the member's new mail is injected as an <inbox> user
// message and consumed in the same append as the model's response, so a
// crash before that append delivers it again and a mail is never consumed
// twice.
type memberStrategy struct {
	lead   bool
	member Teammate
	team   string // the team run id (a teammate's; the lead's is its own)
}

// memberRun is the state of a member's run being driven.
type memberRun struct {
	r    *runner
	tc   *teamCtx
	mb   store.Mailboxes
	tb   store.Teams
	ap   *agentPlan
	msgs []model.Message
	// pending holds events to journal with the next record (a piece of
	// work's answer, journaled with what follows it).
	pending []Event
}

func (s memberStrategy) drive(ctx context.Context, r *runner) outcome {
	td := r.info.team
	mb, tb, err := teamStores(r.rt.store)
	if err != nil {
		return outcome{kind: failed, reason: err.Error()}
	}
	team := r.id
	if !s.lead {
		team = s.team
	}
	tc := &teamCtx{r: r, td: td, team: team, self: s.member.Name, lead: s.lead, member: s.member}
	ctx = context.WithValue(ctx, teamKey{}, tc)
	m := &memberRun{r: r, tc: tc, mb: mb, tb: tb, ap: r.plan.root}
	first := 1
	if snap := r.restored(snapMember); snap != nil {
		// Past the spawning of the declared teammates, too.
		m.msgs, first = slices.Clone(snap.Msgs), snap.Next
		for _, id := range snap.Claims {
			tc.noteClaim(id)
		}
	} else if s.lead {
		if out, stop := m.spawnDeclared(ctx); stop {
			return out
		}
	}
	if err := m.loadClaims(); err != nil {
		return outcome{kind: interrupted, err: err}
	}
	for n := first; ; n++ {
		if m.ap.compaction != nil {
			m.msgs = r.dropCompacted(m.ap, "", m.msgs)
		}
		if n > 1 {
			// A boundary: the pieces of work before are answered.
			if seq, live, ok := r.boundary(m.prefix(n-1)+"/reply", false); ok {
				r.checkpoint(ctx, snapMember, seq, live, func(s *runSnap) { s.Next, s.Msgs, s.Claims = n, m.msgs, tc.claimed() })
			}
		}
		opening, out, ok := m.wake(ctx, n)
		if !ok {
			return out
		}
		if n == 1 && !s.lead && strings.TrimSpace(opening) == "" {
			continue // spawned without a prompt: idle until mail comes
		}
		if out, stop := m.work(ctx, n, opening); stop {
			return out
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
func (m *memberRun) spawnDeclared(ctx context.Context) (outcome, bool) {
	var held []func()
	defer func() {
		for _, start := range held {
			start()
		}
	}()
	for _, name := range m.tc.td.order {
		t := m.tc.td.members[name]
		key := "spawn/" + name
		if _, ok := m.r.recorded[key]; ok {
			continue
		}
		if err := m.tc.spawn(ctx, t.Name, t.Role, t.Prompt, m.r.id+"/"+key, &held); err != nil {
			if isStoreErr(err) || ctx.Err() != nil {
				return outcome{kind: interrupted, err: err}, true
			}
			return outcome{kind: failed, reason: "spawn " + name + ": " + err.Error()}, true
		}
		ev := Event{Type: EventMember, Key: key, Agent: name, State: MemberSpawning, Target: memberRunID(m.r.id, name)}
		if err := m.r.append(ctx, []Event{ev}, store.Update{}, m.ap); err != nil {
			return outcome{kind: interrupted, err: err}, true
		}
	}
	return outcome{}, false
}

// wake returns the opening message of piece of work n once the member has
// something to do; ok false with the outcome that ends this drive (the
// member paused, idle or waiting for the user).
func (m *memberRun) wake(ctx context.Context, n int) (opening string, out outcome, ok bool) {
	r, key := m.r, m.prefix(n)
	if m.tc.lead {
		if task := leadTask(r); n == 1 && task != "" {
			return task, outcome{}, true
		}
		text, ok, err := r.await(ctx, m.ap, Event{Type: EventPaused, Key: key + "/await", Agent: m.ap.name, Reason: AwaitingMessage}, store.Update{Agent: m.ap.name})
		switch {
		case err != nil:
			return "", outcome{kind: interrupted, err: err}, false
		case !ok:
			return "", outcome{kind: paused}, false
		}
		return text, outcome{}, true
	}
	if n == 1 {
		var prompt string
		_ = json.Unmarshal(r.input, &prompt)
		return prompt, outcome{}, true
	}
	// Each wake is piece of work n; the first is the prompt's.
	limit := outcome{kind: failed, reason: fmt.Sprintf("teammate %s reached its limit of %d wakes", m.tc.self, m.tc.td.maxWakes)}
	over := n > m.tc.td.maxWakes+1
	for _, k := range []string{key + "/wake", key + "/await/resumed"} {
		if rec, ok := r.recorded[k]; ok {
			if over {
				return "", limit, false
			}
			ev, err := decodeEvent(rec)
			if err != nil {
				return "", outcome{kind: interrupted, err: &storeError{err}}, false
			}
			return ev.Message, outcome{}, true
		}
	}
	// Live: is there anything to do?
	opening, task, busy, err := m.work2do(ctx)
	if err != nil {
		return "", outcome{kind: interrupted, err: err}, false
	}
	_, idle := r.recorded[key+"/await"]
	if busy && over {
		return "", limit, false
	}
	evs := m.pending
	m.pending = nil
	if busy {
		wk := key + "/wake"
		if idle {
			wk = key + "/await/resumed"
		}
		evs = append(evs, Event{Type: EventMember, Key: wk, Agent: m.tc.self, State: MemberWorking, Message: opening, Task: task})
		if idle {
			evs[len(evs)-1].Type = EventResumed
		}
		if err := r.append(ctx, evs, store.Update{State: store.Running, ClearReason: true, Agent: m.tc.self}, m.ap); err != nil {
			return "", outcome{kind: interrupted, err: err}, false
		}
		return opening, outcome{}, true
	}
	if !idle {
		evs = append(evs,
			Event{Type: EventMember, Key: key + "/idle", Agent: m.tc.self, State: MemberIdle},
			Event{Type: EventPaused, Key: key + "/await", Agent: m.tc.self, Reason: AwaitingMail})
	}
	if err := r.append(ctx, evs, store.Update{State: store.Paused, Reason: AwaitingMail, Agent: m.tc.self}, m.ap); err != nil {
		return "", outcome{kind: interrupted, err: err}, false
	}
	// Mail posted while the member was still running did not wake it:
	// look again now that it is paused (a post from now on wakes it).
	if mails, _, err := m.mb.Mailbox(ctx, r.id, 1); err == nil && len(mails) > 0 {
		r.rt.nudge(context.WithoutCancel(ctx), r.id, r.seq.Load())
	}
	return "", outcome{kind: paused}, false
}

// leadTask is the lead's first task: its run's input, if any.
func leadTask(r *runner) string {
	var task string
	_ = json.Unmarshal(r.input, &task)
	return task
}

// work2do reports whether an idle teammate has work: mail (delivered as
// its inbox at the next model call), or, in an autonomous team, a task of
// the board it claims (see claimNext).
func (m *memberRun) work2do(ctx context.Context) (opening string, task *store.Task, busy bool, err error) {
	mails, _, err := m.mb.Mailbox(ctx, m.r.id, 1)
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
	if rec, ok := m.r.recorded[key+"/claim"]; ok {
		ev, err := decodeEvent(rec)
		if err != nil {
			return "", &storeError{err}
		}
		return ev.Message, nil
	}
	opening, task, err := m.claimNext(ctx)
	if err != nil || opening == "" {
		return "", err
	}
	ev := Event{Type: EventMember, Key: key + "/claim", Agent: m.tc.self, State: MemberWorking, Message: opening, Task: task}
	return opening, m.r.append(ctx, []Event{ev}, store.Update{}, m.ap)
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
		return "", nil, err
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
		got, err := m.tb.ClaimTask(ctx, m.tc.team, t.ID, m.tc.self, m.r.id)
		if err != nil {
			if isStoreUnavailable(err) {
				return "", nil, err
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
	for _, rec := range m.r.recorded {
		if t := EventType(rec.Type); t != EventTask && t != EventMember || !strings.Contains(string(rec.Data), `"task":`) {
			continue
		}
		ev, err := decodeEvent(rec)
		if err != nil {
			return &storeError{err}
		}
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

// work runs piece of work n: the member's tool-calling loop on opening and
// its mail, until its model answers with text. stop reports an outcome
// that ends the drive.
func (m *memberRun) work(ctx context.Context, n int, opening string) (outcome, bool) {
	r, ap, key := m.r, m.ap, m.prefix(n)
	if m.tc.lead && (n > 1 || leadTask(r) == "") {
		// A user message (the run's input was checked as such): a
		// rejected one is answered with the rejection and left out of
		// the lead's history.
		v, g, out, stop := r.guardText(ctx, ap, key, opening)
		if stop {
			return out, true
		}
		if v.Action == Reject {
			return m.answer(ctx, n, 0, "", guardReason(g, v))
		}
	}
	if opening != "" {
		m.msgs = append(m.msgs, model.Message{Role: model.RoleUser, Content: opening})
	}
	for turn := 1; ; turn++ {
		if turn > ap.maxTurns {
			return m.answer(ctx, n, turn-1, "", fmt.Sprintf("%s gave no answer within its max turns (%d)", ap.name, ap.maxTurns))
		}
		tkey := key + "/t" + strconv.Itoa(turn)
		var x stepExtra
		_, replayed := r.recorded[tkey+"/model"]
		if _, ended := r.recorded[key+"/reply"]; ended && !replayed {
			return outcome{}, false
		}
		if rec, ok := r.recorded[tkey+"/inbox"]; ok {
			ev, err := decodeEvent(rec)
			if err != nil {
				return outcome{kind: interrupted, err: &storeError{err}}, true
			}
			m.msgs = append(m.msgs, model.Message{Role: model.RoleUser, Content: mailText(ev.Mails)})
		} else if !replayed {
			mails, _, err := m.mb.Mailbox(ctx, r.id, maxInbox)
			if err != nil {
				return outcome{kind: interrupted, err: err}, true
			}
			if len(mails) > 0 {
				m.msgs = append(m.msgs, model.Message{Role: model.RoleUser, Content: mailText(mails)})
				x.events = []Event{{Type: EventInbox, Key: tkey + "/inbox", Agent: ap.name, Mails: mails}}
				x.ackMail = mails[len(mails)-1].Seq
			}
		}
		if turn == 1 && (len(m.msgs) == 0 || m.msgs[len(m.msgs)-1].Role != model.RoleUser) {
			// Woken with no mail (to look at the task board, say).
			task, err := m.claimed(ctx, key)
			if err != nil {
				return outcome{kind: interrupted, err: err}, true
			}
			if task == "" {
				return m.answer(ctx, n, 0, "", "woken with nothing to do")
			}
			m.msgs = append(m.msgs, model.Message{Role: model.RoleUser, Content: task})
		}
		if len(m.pending) > 0 {
			x.events = append(m.pending, x.events...)
			m.pending = nil
		}
		resp, err := r.modelStepWith(ctx, ap, tkey, turn, m.msgs, &x)
		if err != nil {
			if out, stop := stepFailed(ctx, err); stop {
				return out, true
			}
			return m.answer(ctx, n, turn, "", err.Error())
		}
		m.msgs = append(m.msgs, resp.Message)
		calls := resp.Message.ToolCalls
		if len(calls) == 0 {
			return m.answer(ctx, n, turn, resp.Message.Content, "")
		}
		rd := &round{ap: ap, tkey: tkey, turn: turn, merge: true}
		results := r.execCalls(ctx, rd, calls)
		if ctx.Err() != nil {
			return outcome{kind: interrupted, err: context.Cause(ctx)}, true
		}
		if out, stop := r.below(ctx, ap, results, store.Update{}); stop {
			return out, true
		}
		for i, c := range calls {
			m.msgs = append(m.msgs, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: results[i].output, IsError: results[i].isError, Parts: results[i].parts})
		}
		if !rd.ended.Load() {
			if err := r.turnDone(ctx, ap, tkey, turn); err != nil {
				return outcome{kind: interrupted, err: err}, true
			}
		}
		if reason, ok := m.shutdownApproved(tkey, calls); ok {
			if _, err := m.tb.ReleaseTasks(ctx, m.tc.team, r.id); err != nil {
				return outcome{kind: interrupted, err: err}, true
			}
			res, _ := json.Marshal("shut down: " + reason)
			return outcome{kind: completed, result: res}, true
		}
	}
}

// maxInbox bounds the mails injected at one model call; the rest come at
// the next.
const maxInbox = 100

// answer ends piece of work n with the member's text (or a failure). The
// lead's answer is its reply to the user, journaled with the pause that
// awaits the next message; a teammate's is journaled with what it does
// next (goes idle, or works on).
func (m *memberRun) answer(ctx context.Context, n, turn int, text, failure string) (outcome, bool) {
	r, key := m.r, m.prefix(n)+"/reply"
	if _, ok := r.recorded[key]; ok {
		return outcome{}, false
	}
	reply := Event{Type: EventReply, Key: key, Agent: m.ap.name, Text: text, Turn: turn, IsError: failure != "", Reason: failure}
	if !m.tc.lead {
		m.pending = append(m.pending, reply)
		return outcome{}, false
	}
	evs := []Event{reply, {Type: EventPaused, Key: m.prefix(n+1) + "/await", Agent: m.ap.name, Reason: AwaitingMessage}}
	if err := r.append(ctx, evs, store.Update{State: store.Paused, Reason: AwaitingMessage, Agent: m.ap.name}, m.ap); err != nil {
		return outcome{kind: interrupted, err: err}, true
	}
	return outcome{kind: paused}, true
}

// shutdownApproved reports whether one of calls (of round tkey) approved a
// shutdown request, live or as recorded, and the request's reason.
func (m *memberRun) shutdownApproved(tkey string, calls []model.ToolCall) (string, bool) {
	if m.tc.lead {
		return "", false
	}
	for _, c := range calls {
		if c.Name != toolShutdownResponse {
			continue
		}
		rec, ok := m.r.recorded[tkey+"/tool/"+c.ID+"/protocol"]
		if !ok {
			if reason := m.tc.takeShutdown(tkey + "/tool/" + c.ID); reason != "" {
				return reason, true
			}
			continue
		}
		ev, err := decodeEvent(rec)
		if err == nil && ev.Protocol != nil && ev.Protocol.Kind == ProtocolShutdown && ev.Protocol.State == store.RequestApproved {
			return ev.Protocol.Content, true
		}
	}
	return "", false
}
