package swarm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// convKey carries a conversation's *convState in the context of its steps.
type convKey struct{}

// convState is the shared context of a conversation being driven, and what
// its tools need to know about the round being executed.
type convState struct {
	def   *convDef
	upd   sync.Mutex // serializes updates
	order sync.Mutex // orders the appends of results carrying the context
	mu    sync.Mutex
	cur   json.RawMessage
	// dirty holds the step keys of tool calls that changed the context and
	// whose results are not journaled yet.
	dirty map[string]bool
	// honoured is the step key of the handover the round honours, and
	// honouredTo its target.
	honoured, honouredTo string
}

func (st *convState) get() json.RawMessage {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cur
}

// set replaces the context; key, when not empty, is the step that did it.
func (st *convState) set(key string, raw json.RawMessage) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cur = raw
	if key != "" {
		st.dirty[key] = true
	}
}

// merge writes fields into an object context.
func (st *convState) merge(key string, fields map[string]json.RawMessage) error {
	st.upd.Lock()
	defer st.upd.Unlock()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(st.get(), &obj); err != nil {
		return fmt.Errorf("the conversation context is not an object: %w", err)
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	maps.Copy(obj, fields)
	raw, err := json.Marshal(obj)
	if err == nil {
		raw, err = st.def.canonical(raw)
	}
	if err != nil {
		return err
	}
	st.set(key, raw)
	return nil
}

// stampResult adds to a tool result what a conversation journals with it:
// the context the call changed, and the target of the handover it made.
// A result that carries the context holds the conversation's order lock
// until done is called after its append, so that journal order is the
// order of the snapshots and recovery restores the newest.
func stampResult(ctx context.Context, ev *Event) (done func()) {
	st, ok := ctx.Value(convKey{}).(*convState)
	if !ok {
		return func() {}
	}
	st.mu.Lock()
	dirty := st.dirty[ev.Key]
	if ev.Key == st.honoured && !ev.IsError {
		ev.Target = st.honouredTo
	}
	st.mu.Unlock()
	if !dirty {
		return func() {}
	}
	st.order.Lock()
	st.mu.Lock()
	ev.Shared = st.cur
	delete(st.dirty, ev.Key)
	st.mu.Unlock()
	return st.order.Unlock
}

// conversation drives a conversation run: it replays the user messages
// recorded in the journal, turn by turn, and answers the newest one.
type conversation struct {
	r      *runner
	cd     *convDef
	st     *convState
	active string
	log    []convEntry
	// snaps holds, per round ("m2/t3"), the newest context journaled by
	// one of its tool results.
	snaps map[string]json.RawMessage
}

// convEntry is one message of the conversation, attributed to its agent
// ("" for the user).
type convEntry struct {
	N     int           `json:"n"`
	Agent string        `json:"agent,omitempty"`
	Msg   model.Message `json:"msg"`
}

// conversationStrategy drives a conversation run: one turn per user
// message, each answered by the active agent and whoever it hands over to.
type conversationStrategy struct{}

func (conversationStrategy) drive(ctx context.Context, r *runner) outcome {
	cd := r.info.conv
	st := &convState{def: cd, dirty: map[string]bool{}, cur: cd.initial}
	if len(r.input) > 0 && string(r.input) != "null" {
		raw, err := cd.canonical(r.input)
		if err != nil {
			return outcome{kind: failed, reason: err.Error()}
		}
		st.cur = raw
	}
	c := &conversation{r: r, cd: cd, st: st, active: cd.queen, snaps: map[string]json.RawMessage{}}
	seqs := map[string]int64{}
	for key, rec := range r.recorded {
		if rec.Type != string(EventToolResult) || !bytes.Contains(rec.Data, []byte(`"shared":`)) {
			continue
		}
		ev, err := decodeEvent(rec)
		if err != nil {
			return outcome{kind: interrupted, err: &storeError{err}}
		}
		round := key
		if i := strings.IndexByte(key, '/'); i >= 0 {
			if j := strings.IndexByte(key[i+1:], '/'); j >= 0 {
				round = key[:i+1+j]
			}
		}
		if rec.Seq > seqs[round] {
			seqs[round], c.snaps[round] = rec.Seq, ev.Shared
		}
	}
	ctx = context.WithValue(ctx, convKey{}, st)
	first := 1
	if s := r.restored(snapConversation); s != nil {
		first, c.active = s.Next, s.Active
		if len(s.Shared) > 0 {
			st.cur = s.Shared
		}
		c.log = slices.Clone(s.Log)
	}
	for n := first; ; n++ {
		c.dropCompacted(n)
		if n > 1 {
			// A boundary: the messages before are answered.
			if seq, live, ok := r.boundary("m"+strconv.Itoa(n-1)+"/reply", false); ok {
				r.checkpoint(ctx, snapConversation, seq, live, func(s *runSnap) {
					s.Next, s.Active, s.Shared = n, c.active, st.get()
					s.Log = c.log
				})
			}
		}
		if out, more := c.message(ctx, n); !more {
			return out
		}
	}
}

// message answers user message n (or replays its answer). more reports
// whether the journal holds a later message.
func (c *conversation) message(ctx context.Context, n int) (out outcome, more bool) {
	r := c.r
	mkey := "m" + strconv.Itoa(n)
	text, ok, err := r.await(ctx, nil, Event{Type: EventPaused, Key: mkey + "/await", Agent: r.info.id, Reason: AwaitingMessage}, store.Update{Agent: c.active})
	switch {
	case err != nil:
		return outcome{kind: interrupted, err: err}, false
	case !ok:
		return outcome{kind: paused}, false
	}
	c.log = append(c.log, convEntry{N: n, Msg: model.Message{Role: model.RoleUser, Content: text}})
	if out, more, stop := c.screen(ctx, n, mkey, text); stop {
		return out, more
	}
	if rec, ok := r.recorded[mkey+"/reply"]; ok {
		ev, err := decodeEvent(rec)
		if err != nil {
			return outcome{kind: interrupted, err: &storeError{err}}, false
		}
		if ev.IsError {
			// A failed turn leaves only the user's message in the history.
			if len(ev.Shared) > 0 {
				c.st.set("", ev.Shared)
			}
			if ev.Target != "" {
				c.active = ev.Target
			}
			return outcome{}, true
		}
	}
	return c.turn(ctx, n, mkey)
}

// turn runs the active agent (and whoever it hands over to) on message n
// until an agent answers with text.
func (c *conversation) turn(ctx context.Context, n int, mkey string) (outcome, bool) {
	r, cd := c.r, c.cd
	start := len(c.log)
	fail := func(turn int, reason string) (outcome, bool) {
		c.log = c.log[:start]
		return c.reply(ctx, n, turn, c.active, "", reason)
	}
	ap, err := c.activate()
	if err != nil {
		return fail(0, err.Error())
	}
	for turn := 1; ; turn++ {
		if turn > cd.maxTurns {
			return fail(turn-1, fmt.Sprintf("no answer within the max turns (%d) of one message", cd.maxTurns))
		}
		tkey := mkey + "/t" + strconv.Itoa(turn)
		if ap.system, err = r.rt.render(cd.agents[c.active].Instructions, c.data()); err != nil {
			return fail(turn, "instructions of "+c.active+": "+err.Error())
		}
		// A recorded response needs no request (but the inspected one):
		// replaying a long conversation stays linear.
		_, replayed := r.recorded[tkey+"/model"]
		var msgs []model.Message
		if _, compacted := r.recorded[tkey+"/compact"]; !replayed || compacted || r.inspecting(tkey+"/model") {
			// (A recorded compaction is replayed on the history, to
			// restore the summary that later requests build on.)
			msgs = c.history(c.active, n)
		}
		resp, err := r.modelStep(ctx, ap, tkey, turn, msgs)
		if err != nil {
			if out, stop := stepFailed(ctx, err); stop {
				return out, false
			}
			return fail(turn, err.Error())
		}
		c.log = append(c.log, convEntry{N: n, Agent: c.active, Msg: resp.Message})
		calls := resp.Message.ToolCalls
		if len(calls) == 0 {
			if !replayed {
				c.step(ctx, n, turn, resp, nil, "")
			}
			return c.reply(ctx, n, turn, c.active, resp.Message.Content, "")
		}
		if s, ok := c.snaps[tkey]; ok {
			c.st.set("", s)
		}
		hi, target := c.honour(tkey, calls)
		rd := &round{ap: ap, tkey: tkey, turn: turn, merge: true}
		results := r.execCalls(ctx, rd, calls)
		if ctx.Err() != nil {
			return outcome{kind: interrupted, err: context.Cause(ctx)}, false
		}
		if out, stop := r.below(ctx, ap, results, store.Update{}); stop {
			return out, false
		}
		for i, call := range calls {
			c.log = append(c.log, convEntry{N: n, Agent: c.active, Msg: model.Message{Role: model.RoleTool, ToolCallID: call.ID,
				Name: call.Name, Content: results[i].output, IsError: results[i].isError, Parts: results[i].parts}})
		}
		if !rd.ended.Load() {
			if err := r.turnDone(ctx, ap, tkey, turn); err != nil {
				return outcome{kind: interrupted, err: err}, false
			}
		}
		to := ""
		if hi >= 0 && !results[hi].isError {
			to = target
		}
		if !replayed {
			c.step(ctx, n, turn, resp, c.log[len(c.log)-len(calls):], to)
		}
		if to != "" {
			c.active = to
			if ap, err = c.activate(); err != nil {
				return fail(turn, err.Error())
			}
		}
	}
}

// reply journals the answer to message n (or a failed turn, with reason)
// together with the pause that awaits message n+1.
func (c *conversation) reply(ctx context.Context, n, turn int, agent, text, failure string) (outcome, bool) {
	r := c.r
	key := "m" + strconv.Itoa(n) + "/reply"
	if c.cd.returnToQueen {
		c.active = c.cd.queen
	}
	if _, ok := r.recorded[key]; ok {
		return outcome{}, true
	}
	evs := []Event{
		{Type: EventReply, Key: key, Agent: agent, Text: text, Target: c.active, Shared: c.st.get(), Turn: turn, IsError: failure != "", Reason: failure},
		{Type: EventPaused, Key: "m" + strconv.Itoa(n+1) + "/await", Agent: r.info.id, Reason: AwaitingMessage},
	}
	if err := r.append(ctx, evs, store.Update{State: store.Paused, Reason: AwaitingMessage, Agent: c.active}, r.plan.root); err != nil {
		return outcome{kind: interrupted, err: err}, false
	}
	return outcome{kind: paused}, false
}

// activate plans the active agent: its tools, its handovers (those it may
// not make stay hidden from the model) and its delegations.
func (c *conversation) activate() (*agentPlan, error) {
	r, cd := c.r, c.cd
	a := cd.agents[c.active]
	if a == nil {
		return nil, fmt.Errorf("%w: the journal names agent %q, which conversation %s does not have", ErrUnknownAgent, c.active, r.info.id)
	}
	r.plan.agents = map[string]*agentPlan{}
	r.plan.srcs = map[string]agentSrc{a.Name: {agent: a, place: "conversation " + r.info.id}}
	ts := append(slices.Clip(a.Tools), cd.transfers[a.Name]...)
	ap, err := r.rt.planAgent(r.plan, a.Name, false, a.Instructions, a.Model, ts, a.Handoffs, cd.maxTurns, &a.Hooks, c.data(), r.info)
	if err != nil {
		return nil, err
	}
	hidden := map[string]bool{}
	for _, t := range cd.transfers[a.Name] {
		if tt := t.(*transferTool); tt.blocked != nil {
			hidden[tt.Name()] = true
		}
	}
	ap.toolDefs = slices.DeleteFunc(ap.toolDefs, func(d model.ToolDef) bool { return hidden[d.Name] })
	ap.guards = cd.guards[a.Name]
	if err := ap.setCompaction(cd.compaction, a.Compaction); err != nil {
		return nil, err
	}
	return ap, nil
}

// screen checks user message n (the last entry of the log) with the input
// guardrails of the agent to answer it. A rejected message is answered
// with a failed turn and taken out of the history; stop reports that the
// message is settled (out and more are message's results).
func (c *conversation) screen(ctx context.Context, n int, mkey, text string) (out outcome, more, stop bool) {
	a := c.cd.agents[c.active]
	gs := c.cd.guards[c.active].at(GuardInput)
	if a == nil || len(gs) == 0 {
		return outcome{}, false, false
	}
	if _, answered := c.r.recorded[mkey+"/reply"]; answered {
		if _, checked := c.r.recorded[mkey+"/guard/"+gs[0].Name]; !checked {
			return outcome{}, false, false // answered before the guardrails were there
		}
	}
	ap := &agentPlan{name: a.Name, guards: c.cd.guards[a.Name], hooks: &a.Hooks}
	v, g, out, stop := c.r.guardText(ctx, ap, mkey, text)
	switch {
	case stop:
		return out, false, true
	case v.Action != Reject:
		return outcome{}, false, false
	}
	c.log = c.log[:len(c.log)-1]
	out, more = c.reply(ctx, n, 0, c.active, "", guardReason(g, v))
	return out, more, true
}

// data is what instructions are rendered against: the run's values and the
// shared context as Context.
func (c *conversation) data() map[string]any {
	d := make(map[string]any, len(c.r.values)+1)
	maps.Copy(d, c.r.values)
	if v, err := c.cd.decode(c.st.get()); err == nil {
		d["Context"] = v
	}
	return d
}

// honour picks the handover a round honours: the first call of a transfer
// tool offered to the active agent. It returns the call's index (-1: none)
// and target.
func (c *conversation) honour(tkey string, calls []model.ToolCall) (int, string) {
	hi, key, to := -1, "", ""
	for i, call := range calls {
		if t, ok := c.cd.offered[c.active][call.Name]; ok {
			hi, key, to = i, tkey+"/tool/"+call.ID, t
			break
		}
	}
	c.st.mu.Lock()
	c.st.honoured, c.st.honouredTo = key, to
	c.st.mu.Unlock()
	return hi, to
}

// history is what agent sees of the conversation while answering message n.
func (c *conversation) history(agent string, n int) []model.Message {
	pol := c.cd.policy(agent)
	out := make([]model.Message, 0, len(c.log))
	for _, e := range c.log {
		if m, ok := c.seen(e, agent, pol, n); ok {
			out = append(out, m)
		}
	}
	return out
}

// seen is what entry e of the log is in agent's history (under policy
// pol) while it answers message n, if anything.
func (c *conversation) seen(e convEntry, agent string, pol HistoryPolicy, n int) (model.Message, bool) {
	m := e.Msg
	switch {
	case e.Agent == "":
	case e.Agent == agent:
		if pol == HistoryText && e.N != n {
			if m.Role != model.RoleAssistant || m.Content == "" {
				return m, false
			}
			m = model.Message{Role: model.RoleAssistant, Content: m.Content}
		}
	case pol == HistoryFull:
		if c.cd.nameSpeakers && m.Content != "" && m.Role == model.RoleAssistant {
			m.Content = "[" + e.Agent + "] " + m.Content
		}
	case m.Role != model.RoleAssistant || m.Content == "":
		return m, false
	default:
		m = model.Message{Role: model.RoleAssistant, Content: m.Content}
		if c.cd.nameSpeakers {
			m.Content = "[" + e.Agent + "] " + m.Content
		}
	}
	return m, true
}

// dropCompacted drops from the log, before message n, the entries that
// the compaction of every agent of the conversation has summarized (see
// compactStream.drop): the messages before n stay as they are in every
// history. An agent that compacts nothing yet (or has no compaction)
// needs the whole log, so until each has a summary nothing is dropped.
func (c *conversation) dropCompacted(n int) {
	r := c.r
	type agentCut struct {
		name string
		pol  HistoryPolicy
		cs   *compactStream
		h    []model.Message
	}
	cuts := make([]agentCut, 0, len(c.cd.agents))
	r.mu.Lock()
	for name := range c.cd.agents {
		cs := r.compacted[streamOf(name, "")]
		if cs == nil || cs.st == nil {
			r.mu.Unlock()
			return
		}
		cuts = append(cuts, agentCut{name: name, pol: c.cd.policy(name), cs: cs})
	}
	r.mu.Unlock()
	// end: the log entries up to the end of what every agent's summary
	// replaces.
	end := len(c.log)
	for i := range cuts {
		a := &cuts[i]
		a.h = c.history(a.name, n)
		st := a.cs.st.valid(a.h)
		if st == nil || st.upto < 2 {
			return
		}
		seen := 0
		for j, e := range c.log {
			if _, ok := c.seen(e, a.name, a.pol, n); ok {
				if seen++; seen == st.upto {
					end = min(end, j+1)
					break
				}
			}
		}
	}
	if end <= 1 {
		return
	}
	r.mu.Lock()
	for _, a := range cuts {
		d := 0
		for _, e := range c.log[1:end] {
			if _, ok := c.seen(e, a.name, a.pol, n); ok {
				d++
			}
		}
		a.cs.drop(a.h, d)
	}
	r.mu.Unlock()
	c.log = append([]convEntry{c.log[0]}, c.log[end:]...)
}

// step calls the OnStep hook.
func (c *conversation) step(ctx context.Context, n, turn int, resp *model.Response, results []convEntry, to string) {
	if c.cd.onStep == nil {
		return
	}
	s := ConversationStep[json.RawMessage]{Message: n, Turn: turn, Agent: c.active, Text: resp.Message.Content,
		ToolCalls: resp.Message.ToolCalls, HandoverTo: to, Context: c.st.get()}
	for _, e := range results {
		s.Results = append(s.Results, e.Msg)
	}
	c.cd.onStep(ctx, s)
}
