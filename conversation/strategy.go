package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/strategy"
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

// stamp adds to a tool result what a conversation journals with it (see
// strategy.StampResults): the context the call changed, and the target of
// the handover it made. A result that carries the context holds the
// conversation's order lock until it is journaled, so that journal order
// is the order of the snapshots and recovery restores the newest.
func (st *convState) stamp(ev *swarm.Event) (journaled func()) {
	st.mu.Lock()
	dirty := st.dirty[ev.Key]
	if ev.Key == st.honoured && !ev.IsError {
		ev.Target = st.honouredTo
	}
	st.mu.Unlock()
	if !dirty {
		return nil
	}
	st.order.Lock()
	st.mu.Lock()
	ev.Shared = st.cur
	delete(st.dirty, ev.Key)
	st.mu.Unlock()
	return st.order.Unlock
}

// strategy drives a conversation run: one turn per user message, each
// answered by the active agent and whoever it hands over to. It replays
// the user messages recorded in the journal, turn by turn, and answers the
// newest one.
type convStrategy struct{ cd *convDef }

// SnapshotKind names the conversation's checkpoints as the engine named
// them when conversations were its own, so that those are read too.
func (convStrategy) SnapshotKind() string { return "conversation" }

// CheckpointEvery checkpoints at every message boundary: each message
// drives the run again, which replays the journal from the newest
// checkpoint, so that a message replays only the one before it however
// long the conversation.
func (convStrategy) CheckpointEvery() int { return 1 }

// LongLived: a conversation answers one user message after another, so
// its tree's call limits count per message (see strategy.LongLived).
func (convStrategy) LongLived() bool { return true }

// Check refuses a run whose input is not a context of the conversation.
func (s convStrategy) Check(d *strategy.Driver) (int, error) {
	if s.cd == nil {
		return 0, nil
	}
	if in := d.Input(); len(in) > 0 && string(in) != "null" {
		if _, err := s.cd.canonical(in); err != nil {
			return 0, err
		}
	}
	return s.cd.maxTurns, nil
}

// conversation is a conversation being driven.
type conversation struct {
	d      *strategy.Driver
	cd     *convDef
	st     *convState
	active string
	log    []convEntry
	// cuts is, per agent, the index of the log from which its history
	// goes on after the first message: what came before is summarized
	// by its compaction (absent: 1).
	cuts map[string]int
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

// snapState is a conversation's checkpoint at a message boundary (its
// fields are those the engine's own conversation snapshots had at their
// top level, which Restore reads too).
type snapState struct {
	Next   int             `json:"next"`
	Active string          `json:"active,omitempty"`
	Shared json.RawMessage `json:"shared,omitempty"`
	Log    []convEntry     `json:"log,omitempty"`
	Cuts   map[string]int  `json:"cuts,omitempty"`
}

// Drive runs the conversation.
func (s convStrategy) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	cd := s.cd
	st := &convState{def: cd, dirty: map[string]bool{}, cur: cd.initial}
	if in := d.Input(); len(in) > 0 && string(in) != "null" {
		raw, err := cd.canonical(in)
		if err != nil {
			return nil, &strategy.Failure{Reason: err.Error()}
		}
		st.cur = raw
	}
	c := &conversation{d: d, cd: cd, st: st, active: cd.queen, cuts: map[string]int{}, snaps: map[string]json.RawMessage{}}
	results, err := d.Journaled(swarm.EventToolResult)
	if err != nil {
		return nil, err
	}
	for _, ev := range results {
		if len(ev.Shared) == 0 {
			continue
		}
		round := ev.Key
		if i := strings.IndexByte(round, '/'); i >= 0 {
			if j := strings.IndexByte(round[i+1:], '/'); j >= 0 {
				round = round[:i+1+j]
			}
		}
		c.snaps[round] = ev.Shared // journal order: the newest wins
	}
	ctx = context.WithValue(ctx, convKey{}, st)
	ctx = strategy.StampResults(ctx, st.stamp)
	first := 1
	var snap snapState
	if ok, err := d.Restore(&snap); err != nil {
		return nil, err
	} else if ok {
		first, c.active = snap.Next, snap.Active
		if len(snap.Shared) > 0 {
			st.cur = snap.Shared
		}
		c.log = slices.Clone(snap.Log)
		if snap.Cuts != nil {
			c.cuts = snap.Cuts
		}
	}
	for n := first; ; n++ {
		c.dropCompacted(n)
		if n > 1 {
			// A boundary: the messages before are answered.
			d.Checkpoint(ctx, "m"+strconv.Itoa(n-1)+"/reply", snapState{Next: n, Active: c.active, Shared: st.get(), Log: c.log, Cuts: c.cuts})
		}
		if err, more := c.message(ctx, n); !more {
			return nil, err
		}
	}
}

// as is the Driver whose steps act as agent name: its tools, its
// handovers (those it may not make stay hidden from the model), the
// conversation's guardrails and compaction, and the context in its
// instructions.
func (c *conversation) as(name string) (*strategy.Driver, error) {
	a := c.cd.agents[name]
	if a == nil {
		return nil, fmt.Errorf("%w: the journal names agent %q, which conversation %s does not have", swarm.ErrUnknownAgent, name, c.cd.id)
	}
	var offered, hidden []swarm.Tool
	for _, t := range c.cd.transfers[name] {
		if t.(*transferTool).blocked != nil {
			hidden = append(hidden, t)
		} else {
			offered = append(offered, t)
		}
	}
	return c.d.As(a, strategy.Acting{Tools: offered, Hidden: hidden, Data: c.data(), MaxTurns: c.cd.maxTurns,
		Guardrails: c.cd.guards, Compaction: c.cd.compaction})
}

// message answers user message n (or replays its answer). more reports
// whether the journal holds a later message; err is what ends this drive
// otherwise.
func (c *conversation) message(ctx context.Context, n int) (err error, more bool) {
	mkey := "m" + strconv.Itoa(n)
	ad, aerr := c.as(c.active)
	if aerr != nil {
		ad = c.d // an agent the journal names that the conversation lacks: the turn fails
	}
	text, parts, err := ad.AwaitParts(ctx, mkey+"/await", strategy.Question{Reason: swarm.AwaitingMessage})
	if err != nil {
		return err, false
	}
	c.log = append(c.log, convEntry{N: n, Msg: model.Message{Role: model.RoleUser, Content: text, Parts: parts}})
	if err, more, stop := c.screen(ctx, ad, n, mkey, text); stop {
		return err, more
	}
	ev, ok, err := c.d.RecordedEvent(mkey + "/reply")
	if err != nil {
		return err, false
	}
	if ok && ev.IsError {
		// A failed turn leaves only the user's message in the history.
		if len(ev.Shared) > 0 {
			c.st.set("", ev.Shared)
		}
		if ev.Target != "" {
			c.active = ev.Target
		}
		return nil, true
	}
	return c.turn(ctx, n, mkey)
}

// turn runs the active agent (and whoever it hands over to) on message n
// until an agent answers with text.
func (c *conversation) turn(ctx context.Context, n int, mkey string) (error, bool) {
	cd := c.cd
	start := len(c.log)
	fail := func(turn int, reason string) (error, bool) {
		c.log = c.log[:start]
		return c.reply(ctx, n, turn, c.active, "", reason)
	}
	if _, err := c.as(c.active); err != nil {
		return fail(0, err.Error())
	}
	for turn := 1; ; turn++ {
		if turn > cd.maxTurns {
			return fail(turn-1, fmt.Sprintf("no answer within the max turns (%d) of one message", cd.maxTurns))
		}
		tkey := mkey + "/t" + strconv.Itoa(turn)
		ad, err := c.as(c.active)
		if err != nil {
			return fail(turn, err.Error())
		}
		ad = ad.AtTurn(turn)
		_, replayed, err := c.d.RecordedEvent(tkey + "/model")
		if err != nil {
			return err, false
		}
		hist := c.history(c.active, n)
		resp, err := ad.ModelStep(ctx, tkey, hist, strategy.Step{})
		if err != nil {
			var f *strategy.Failure
			if errors.As(err, &f) && !f.Ends() {
				return fail(turn, f.Reason)
			}
			return err, false
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
		// A handoff to a swarm, and a tool forwarding parts, get those of
		// the agent's conversation (the user's attachments among them).
		results, err := ad.Round(strategy.WithConversationParts(ctx, hist), tkey, calls)
		if err != nil {
			return err, false
		}
		for i, call := range calls {
			c.log = append(c.log, convEntry{N: n, Agent: c.active, Msg: model.Message{Role: model.RoleTool, ToolCallID: call.ID,
				Name: call.Name, Content: results[i].Output, IsError: results[i].IsError, Parts: results[i].Parts}})
		}
		to := ""
		if hi >= 0 && !results[hi].IsError {
			to = target
		}
		if !replayed {
			c.step(ctx, n, turn, resp, c.log[len(c.log)-len(calls):], to)
		}
		if to != "" {
			c.active = to
			if _, err := c.as(to); err != nil {
				return fail(turn, err.Error())
			}
		}
	}
}

// reply journals the answer to message n (or a failed turn, with reason)
// together with the pause that awaits message n+1.
func (c *conversation) reply(ctx context.Context, n, turn int, agent, text, failure string) (error, bool) {
	key := "m" + strconv.Itoa(n) + "/reply"
	if c.cd.returnToQueen {
		c.active = c.cd.queen
	}
	if _, ok, err := c.d.RecordedEvent(key); err != nil || ok {
		return err, err == nil
	}
	ad, err := c.as(c.active)
	if err != nil {
		ad = c.d
	}
	evs := []swarm.Event{
		{Type: swarm.EventReply, Key: key, Agent: agent, Text: text, Target: c.active, Shared: c.st.get(), Turn: turn, IsError: failure != "", Reason: failure},
		{Type: swarm.EventPaused, Key: "m" + strconv.Itoa(n+1) + "/await", Agent: c.cd.id, Reason: swarm.AwaitingMessage},
	}
	if err := ad.Journal(ctx, strategy.Entry{Events: evs, Waiting: swarm.AwaitingMessage}); err != nil {
		return err, false
	}
	return strategy.ErrAwaiting, false
}

// screen checks user message n (the last entry of the log) with the input
// guardrails of the agent to answer it (ad acts as it). A rejected message
// is answered with a failed turn and taken out of the history; stop
// reports that the message is settled (err and more are message's
// results).
func (c *conversation) screen(ctx context.Context, ad *strategy.Driver, n int, mkey, text string) (err error, more, stop bool) {
	a := c.cd.agents[c.active]
	if a == nil {
		return nil, false, false
	}
	first := ""
	for _, g := range slices.Concat(c.cd.guards, a.Guardrails) {
		if slices.Contains(g.Points, guardrail.Input) {
			first = g.Name
			break
		}
	}
	if first == "" {
		return nil, false, false
	}
	if _, answered, _ := c.d.RecordedEvent(mkey + "/reply"); answered {
		if _, checked, _ := c.d.RecordedEvent(mkey + "/guard/" + first); !checked {
			return nil, false, false // answered before the guardrails were there
		}
	}
	reason, err := ad.CheckInput(ctx, mkey, text)
	switch {
	case err != nil:
		return err, false, true
	case reason == "":
		return nil, false, false
	}
	c.log = c.log[:len(c.log)-1]
	err, more = c.reply(ctx, n, 0, c.active, "", reason)
	return err, more, true
}

// data is what instructions are rendered against besides the run's
// values: the shared context as Context.
func (c *conversation) data() map[string]any {
	d := map[string]any{}
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
	pol, cut := c.cd.policy(agent), c.cut(agent)
	out := make([]model.Message, 0, len(c.log))
	for i, e := range c.log {
		if i > 0 && i < cut {
			continue // summarized by the agent's compaction
		}
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

// dropCompacted drops from each agent's history, before message n, what
// its compaction has summarized (see strategy.Driver.Compacted), and from the
// log the entries no agent's history needs any more: the messages before n
// stay as they are in every history, and the log and its snapshots stay
// bounded. An agent that compacts nothing (or has no compaction) needs the
// whole log.
func (c *conversation) dropCompacted(n int) {
	names := slices.Sorted(maps.Keys(c.cd.agents))
	if c.cd.compaction == nil && !slices.ContainsFunc(names, func(name string) bool { return c.cd.agents[name].Compaction != nil }) {
		return // nothing is ever summarized: each history would be built for nothing
	}
	for _, name := range names {
		ad, err := c.as(name)
		if err != nil {
			continue
		}
		h := c.history(name, n)
		d := len(h) - len(ad.Compacted(h))
		if d <= 0 {
			continue
		}
		pol, seen, cut := c.cd.policy(name), 0, c.cut(name)
		for j := cut; j < len(c.log) && seen < d; j++ {
			if _, ok := c.seen(c.log[j], name, pol, n); ok {
				seen++
			}
			cut = j + 1
		}
		c.cuts[name] = cut
	}
	end := len(c.log)
	for _, name := range names {
		end = min(end, c.cut(name))
	}
	if end <= 1 {
		return
	}
	c.log = append([]convEntry{c.log[0]}, c.log[end:]...)
	for _, name := range names {
		c.cuts[name] = c.cut(name) - (end - 1)
		if c.cuts[name] <= 1 {
			delete(c.cuts, name)
		}
	}
}

// cut is the index of the log from which agent's history goes on.
func (c *conversation) cut(agent string) int {
	if i, ok := c.cuts[agent]; ok {
		return i
	}
	return 1
}

// step calls the OnStep hook.
func (c *conversation) step(ctx context.Context, n, turn int, resp *model.Response, results []convEntry, to string) {
	if c.cd.onStep == nil {
		return
	}
	s := Step[json.RawMessage]{Message: n, Turn: turn, Agent: c.active, Text: resp.Message.Content,
		ToolCalls: resp.Message.ToolCalls, HandoverTo: to, Context: c.st.get()}
	for _, e := range results {
		s.Results = append(s.Results, e.Msg)
	}
	c.cd.onStep(ctx, s)
}
