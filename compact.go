package swarm

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Compaction keeps an agent's history within its model's context window:
// when a request would pass the trigger, the older part of the history is
// replaced by a summary made by the model. The system prompt, the first
// message (the task), the last Keep rounds and every tool call with its
// result are kept (the cut is always before a model response, so no tool
// call is separated from its result).
//
// The summary is a model call journaled as a step (a compacted event, with
// the range of messages it replaces and the estimated tokens before and
// after), so a replay never recomputes it. The journal keeps the full
// history; the run keeps, and snapshots, only the first message, the
// summary and what follows it. Set it on a [Spec] (every agent of the run)
// or an [Agent] (that agent; it wins over the swarm's).
type Compaction struct {
	// Window is the model's context window in tokens (0: looked up in the
	// table of known models by the agent's model spec, else 128,000).
	Window int
	// Trigger compacts when a request's estimated tokens pass this
	// fraction of the window (default 0.8).
	Trigger float64
	// Messages compacts when the history holds more messages than this
	// (0: no message-count trigger).
	Messages int
	// Keep is how many of the latest rounds (a model response with its
	// tool results) stay verbatim (default 4).
	Keep int
	// Instructions is the summarizer's system prompt (a default asks to
	// keep facts, decisions, open tasks and tool outcomes).
	Instructions string
}

// windows are context windows in tokens by model name prefix (longest
// prefix wins).
var windows = map[string]int{
	"gpt-4.1": 1047576, "gpt-4o": 128000, "gpt-4-turbo": 128000, "gpt-4": 8192, "gpt-3.5-turbo": 16385,
	"gpt-5": 400000, "o1": 200000, "o3": 200000, "o4-mini": 200000,
	"claude-": 200000, "gemini-1.5": 1048576, "gemini-2": 1048576, "llama-3": 128000, "mistral-large": 128000,
}

// ContextWindow returns the context window of a model spec
// ("openai:gpt-4o") from the table of known models, or 0.
func ContextWindow(spec string) int {
	_, name := providerOf(spec)
	best, n := "", 0
	for p, w := range windows {
		if strings.HasPrefix(name, p) && len(p) > len(best) {
			best, n = p, w
		}
	}
	return n
}

const defaultSummaryPrompt = "You compact a conversation between a user, an AI agent and its tools. Write a concise summary of the transcript you are given that keeps every fact, decision, result of a tool, open question and remaining task the agent needs to continue. Write only the summary."

// compaction is an agent's compaction settings, resolved.
type compaction struct {
	window, messages, keep int
	trigger                float64
	prompt                 string
}

func resolveCompaction(c *Compaction, modelSpec string) (*compaction, error) {
	if c == nil {
		return nil, nil
	}
	if c.Window < 0 || c.Trigger < 0 || c.Trigger > 1 || c.Messages < 0 || c.Keep < 0 {
		return nil, fmt.Errorf("%w: compaction: window, messages and keep must not be negative, and trigger must be within 0 and 1", ErrInvalid)
	}
	rc := &compaction{window: c.Window, trigger: c.Trigger, messages: c.Messages, keep: c.Keep, prompt: c.Instructions}
	if rc.window == 0 {
		if rc.window = ContextWindow(modelSpec); rc.window == 0 {
			rc.window = 128000
		}
	}
	if rc.trigger == 0 {
		rc.trigger = 0.8
	}
	if rc.keep == 0 {
		rc.keep = 4
	}
	if rc.prompt == "" {
		rc.prompt = defaultSummaryPrompt
	}
	return rc, nil
}

// estimate is the estimated token count of a request: about four bytes a
// token, plus a few tokens per message.
func estimate(system string, tools []model.ToolDef, msgs []model.Message) int {
	n := len(system)
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	for _, m := range msgs {
		n += len(m.Content) + 16
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.ID) + len(c.Arguments)
		}
		n += 4 * partTokens(m.Parts)
	}
	return n / 4
}

// partTokens estimates the tokens of parts (see model.Part.Tokens).
func partTokens(parts []model.Part) int {
	n := 0
	for i := range parts {
		n += parts[i].Tokens()
	}
	return n
}

// compactState is how far a history stream of a run is compacted.
type compactState struct {
	upto    int // msgs[1:upto] are replaced by summary
	summary string
	print   [32]byte // digest of msgs[:upto], to check the stream is the same
	// settled: what is cut ends at or before the history's last user
	// message, which later requests of the stream repeat unchanged. A
	// conversation's text-only history policy, say, rewrites the agent's
	// tool calls of the message being answered once it is answered: a cut
	// among them holds only while that message is.
	settled bool
	// base is the newest settled state this one builds on (nil for a
	// settled one): what the stream falls back to once this one no
	// longer matches, rather than summarizing the whole history again.
	base *compactState
}

// compactStream is how far one history stream of a run is compacted.
type compactStream struct {
	st *compactState
	// off is how many messages after the first the stream's histories
	// lack: those its strategy dropped once they were summarized for good
	// (see drop). The indexes of st are into the histories as they are
	// given; those journaled count the dropped messages too, so a run
	// journals the same ones whether or not it dropped them.
	off int
}

// drop rebases cs on h, a history of the stream whose first len(h)
// messages stay as they are (its strategy only appends to it), without
// h[1:1+d] (d at most what its valid state summarizes): it returns that
// history, whose first message and summary then stand for what was
// dropped. A strategy that drops what is summarized keeps its history, its
// snapshots and the checks of the prefix a summary replaces the size of
// what is not summarized yet, however long the run.
func (cs *compactStream) drop(h []model.Message, d int) []model.Message {
	st := cs.st.valid(h)
	if st == nil || d <= 0 || d >= st.upto {
		return h
	}
	out := make([]model.Message, 0, len(h)-d)
	out = append(append(out, h[0]), h[1+d:]...)
	upto := st.upto - d
	// What stays as it is is settled; states of other cuts are no longer
	// needed (those before it were replaced by it, those after it do
	// not match h).
	cs.st = &compactState{upto: upto, summary: st.summary, print: fingerprint(out[:upto]), settled: true}
	cs.off += d
	return out
}

// dropCompacted is drop for the history msgs of ap's loop at path: all
// that its valid state summarizes.
func (r *runner) dropCompacted(ap *agentPlan, path string, msgs []model.Message) []model.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.compacted[streamOf(ap.name, path+"t1")]
	if cs == nil {
		return msgs
	}
	if st := cs.st.valid(msgs); st != nil {
		return cs.drop(msgs, st.upto-1)
	}
	return msgs
}

// valid returns the newest state of st's chain that matches msgs, or nil.
func (st *compactState) valid(msgs []model.Message) *compactState {
	for ; st != nil; st = st.base {
		if st.upto <= len(msgs) && fingerprint(msgs[:st.upto]) == st.print {
			return st
		}
	}
	return nil
}

// lastUser is the index of the last user message of msgs (0 if none).
func lastUser(msgs []model.Message) int {
	for i := len(msgs) - 1; i > 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return i
		}
	}
	return 0
}

// settledCut is the latest of the cuts starts that is settled, or 0.
func settledCut(msgs []model.Message, starts []int) int {
	u, cut := lastUser(msgs), 0
	for _, s := range starts {
		if s <= u+1 {
			cut = s
		}
	}
	return cut
}

// next is the state after summarizing msgs[:cut] on top of st (the valid
// state, or nil).
func (st *compactState) next(msgs []model.Message, cut int, summary string) *compactState {
	n := &compactState{upto: cut, summary: summary, print: fingerprint(msgs[:cut]), settled: cut <= lastUser(msgs)+1}
	if !n.settled && st != nil {
		n.base = st
		if !st.settled {
			n.base = st.base
		}
	}
	return n
}

// CompactionInfo is what a compacted event records: the messages of the
// agent's history [From, To) newly summarized (index 0 is the task; the
// summary replaces [1, To), as it includes the previous summary), and the
// estimated tokens of the request before and after.
type CompactionInfo struct {
	From         int `json:"from"`
	To           int `json:"to"`
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
}

func fingerprint(msgs []model.Message) [32]byte {
	h := sha256.New()
	for _, m := range msgs {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00", m.Role, m.ToolCallID, m.Content, len(m.ToolCalls))
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// view is msgs with the compacted part replaced by the summary, folded
// into the first message (st is a valid state, or nil).
func (st *compactState) view(msgs []model.Message) []model.Message {
	if st == nil || st.upto == 0 {
		return msgs
	}
	out := make([]model.Message, 0, len(msgs)-st.upto+1)
	first := msgs[0]
	first.Content += "\n\n[Summary of the conversation so far]\n" + st.summary
	out = append(out, first)
	return append(out, msgs[st.upto:]...)
}

// streamOf names the history an agent's step of round tkey belongs to:
// the agent, and the handoff it runs under.
func streamOf(agent, tkey string) string {
	path := ""
	if i := strings.LastIndex(tkey, "/h/"); i >= 0 {
		if j := strings.IndexByte(tkey[i+3:], '/'); j >= 0 {
			path = tkey[:i+3+j]
		}
	}
	return agent + "@" + path
}

// compact returns the messages to send for the model step of round tkey:
// msgs with the compacted part replaced, compacting further first (a
// journaled summary call) when the request would pass the trigger.
func (r *runner) compact(ctx context.Context, ap *agentPlan, tkey string, turn int, msgs []model.Message) ([]model.Message, error) {
	cc := ap.compaction
	if cc == nil || len(msgs) < 2 {
		return msgs, nil
	}
	stream := streamOf(ap.name, tkey)
	r.mu.Lock()
	if r.compacted == nil {
		r.compacted = map[string]*compactStream{}
	}
	cs := r.compacted[stream]
	if cs == nil {
		cs = &compactStream{}
		r.compacted[stream] = cs
	}
	st, off := cs.st.valid(msgs), cs.off
	r.mu.Unlock()
	key := tkey + "/compact"
	if rec, ok := r.recorded[key]; ok {
		ev, err := decodeEvent(rec)
		if err != nil {
			return nil, &storeError{err}
		}
		if ev.Compaction == nil || ev.Compaction.To-off < 1 || ev.Compaction.To-off > len(msgs) {
			return nil, &storeError{fmt.Errorf("compacted record %s does not match the history", key)}
		}
		next := st.next(msgs, ev.Compaction.To-off, ev.Text)
		r.mu.Lock()
		cs.st = next
		r.mu.Unlock()
		return next.view(msgs), nil
	}
	view := st.view(msgs)
	if _, done := r.recorded[tkey+"/model"]; done {
		return view, nil // the step was made without compacting
	}
	before := estimate(ap.system, ap.toolDefs, view)
	if before <= int(cc.trigger*float64(cc.window)) && (cc.messages == 0 || len(view) <= cc.messages) {
		return view, nil
	}
	// The cut: before the keep-th latest model response after what is
	// compacted already (with fewer rounds than that, half of them).
	from := 1
	if st != nil {
		from = st.upto
	}
	var starts []int
	for i := from; i < len(msgs); i++ {
		if msgs[i].Role == model.RoleAssistant {
			starts = append(starts, i)
		}
	}
	keep := cc.keep
	if len(starts) <= keep {
		keep = len(starts) / 2
	}
	cut := len(msgs)
	if keep > 0 {
		cut = starts[len(starts)-keep]
	}
	if cut <= from || len(starts) == 0 {
		return view, nil // nothing to compact
	}
	var prev string
	if st != nil {
		prev = st.summary
	}
	if settled := settledCut(msgs, starts); cut > settled && settled > from {
		// Rather cut where later requests repeat the history unchanged
		// (see compactState.settled), if what that keeps takes at most
		// half the trigger: summarizing it again at the next message
		// would cost more than keeping it.
		rest := estimate(ap.system+prev, ap.toolDefs, msgs[settled:]) + estimate("", nil, msgs[:1])
		if rest <= int(cc.trigger*float64(cc.window))/2 && (cc.messages == 0 || len(msgs)-settled < cc.messages/2) {
			cut = settled
		}
	}
	summary, usage, err := r.summarize(ctx, ap, cc, prev, msgs[from:cut])
	if err != nil {
		return nil, err
	}
	next := st.next(msgs, cut, summary)
	after := estimate(ap.system, ap.toolDefs, next.view(msgs))
	ev := Event{Type: EventCompacted, Key: key, Agent: ap.name, Turn: turn, Text: summary, Usage: &usage,
		Compaction: &CompactionInfo{From: from + off, To: cut + off, TokensBefore: before, TokensAfter: after}}
	r.mu.Lock()
	total := r.usage.Add(usage)
	r.mu.Unlock()
	if err := r.append(ctx, []Event{ev}, store.Update{Usage: &total}, ap); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.usage = total
	cs.st = next
	r.mu.Unlock()
	return next.view(msgs), nil
}

// summarize asks ap's model for a summary of msgs (after prev, the summary
// of what came before them), in a request within the trigger.
func (r *runner) summarize(ctx context.Context, ap *agentPlan, cc *compaction, prev string, msgs []model.Message) (string, model.Usage, error) {
	limit := 4*int(cc.trigger*float64(cc.window)) - len(cc.prompt) - 16 // bytes, as estimate counts them
	text := transcript(prev, msgs, limit)
	req := &model.Request{Agent: ap.name + "_compact", RunID: r.id, System: cc.prompt,
		Messages: []model.Message{{Role: model.RoleUser, Content: text}}}
	mctx, cancel := context.WithTimeout(ctx, r.rt.cfg.ModelTimeout)
	defer cancel()
	gctx, traced := r.traceChat(mctx, ap, req)
	resp, err := ap.model.Generate(gctx, req)
	traced(resp, err)
	if err == nil && resp == nil {
		err = &model.Error{Kind: model.KindInvalidOutput, Provider: "model", Model: req.Agent, Message: "no response"}
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", model.Usage{}, context.Cause(ctx)
		}
		return "", model.Usage{}, fmt.Errorf("compaction of %s's history: %w", ap.name, err)
	}
	return resp.Message.Content, ap.callUsage(resp.Usage), nil
}

// transcript is what the summarizer reads: prev, then msgs, a line each
// (a tool call a line of its own). When that passes limit bytes, the
// longest lines are clipped to one length (each with a mark saying how
// much was cut) so that it does not: a single tool result larger than the
// window still makes a request within it.
func transcript(prev string, msgs []model.Message, limit int) string {
	type line struct{ head, body string }
	var lines []line
	for _, m := range msgs {
		if m.Role == model.RoleTool {
			lines = append(lines, line{fmt.Sprintf("[tool result %s %s] ", m.Name, m.ToolCallID), m.Content})
			continue
		}
		lines = append(lines, line{"[" + string(m.Role) + "] ", m.Content})
		for _, c := range m.ToolCalls {
			args, _ := json.Marshal(c.Arguments)
			lines = append(lines, line{fmt.Sprintf("[tool call %s %s] ", c.Name, c.ID), string(args)})
		}
	}
	head := "Transcript:\n"
	if prev != "" {
		head = "Summary of the earlier part:\n" + prev + "\n\nTranscript that follows it:\n"
	}
	room, sizes := limit-len(head), make([]int, len(lines))
	for i, l := range lines {
		room -= len(l.head) + 1
		sizes[i] = len(l.body)
	}
	most := fairShare(sizes, room)
	var b strings.Builder
	b.WriteString(head)
	for _, l := range lines {
		b.WriteString(l.head)
		b.WriteString(clipMarked(l.body, most))
		b.WriteByte('\n')
	}
	return b.String()
}

// fairShare is the largest length that sizes can be clipped to for their
// sum to be within room, or -1 if it already is.
func fairShare(sizes []int, room int) int {
	sorted := slices.Sorted(slices.Values(sizes))
	for i, n := range sorted {
		share := room / (len(sorted) - i)
		if n > share {
			return max(share, 0)
		}
		room -= n
	}
	return -1
}

// clipMarked clips s to about n bytes (n < 0: not at all), ending it with
// how much was cut.
func clipMarked(s string, n int) string {
	if n < 0 || len(s) <= n {
		return s
	}
	keep := max(n-48, 0) // room for the mark
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + fmt.Sprintf(" [... %d bytes cut to fit the window]", len(s)-keep)
}

// planCompaction resolves the compaction of each agent of p: its own, or
// the swarm's.
func (p *plan) planCompaction(swarmC *Compaction) error {
	if err := p.root.setCompaction(swarmC, nil); err != nil {
		return err
	}
	for name, ap := range p.agents {
		var own *Compaction
		if src, ok := p.srcs[name]; ok && src.agent != nil {
			own = src.agent.Compaction
		}
		if err := ap.setCompaction(swarmC, own); err != nil {
			return err
		}
	}
	return nil
}

// setCompaction resolves ap's compaction: own if set, else outer's.
func (ap *agentPlan) setCompaction(outer, own *Compaction) error {
	c := outer
	if own != nil {
		c = own
	}
	rc, err := resolveCompaction(c, ap.modelSpec)
	if err != nil {
		return fmt.Errorf("%s: %w", ap.name, err)
	}
	ap.compaction = rc
	return nil
}
