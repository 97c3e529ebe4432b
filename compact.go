package swarm

import (
	"context"
	"fmt"
	"strings"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// The engine's side of compaction (package compact holds its settings and
// its pure part): each history stream's state, the summary call journaled
// as a compacted event, and its replay.

// dropCompacted drops from msgs, the history of ap's loop at path, all
// that its valid state summarizes (see compact.Stream.Drop).
func (r *runner) dropCompacted(ap *agentPlan, path string, msgs []model.Message) []model.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.compacted[streamOf(ap.name, path+"t1")]
	if cs == nil {
		return msgs
	}
	return cs.Drop(msgs)
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
		r.compacted = map[string]*compact.Stream{}
	}
	cs := r.compacted[stream]
	if cs == nil {
		cs = &compact.Stream{}
		r.compacted[stream] = cs
	}
	st, off := cs.State.Valid(msgs), cs.Off
	r.mu.Unlock()
	key := tkey + "/compact"
	if rec, ok := r.recorded[key]; ok {
		ev, err := decodeEvent(rec)
		if err != nil {
			return nil, &seam.Interrupted{Err: err}
		}
		if ev.Compaction == nil || ev.Compaction.To-off < 1 || ev.Compaction.To-off > len(msgs) {
			return nil, &seam.Interrupted{Err: fmt.Errorf("compacted record %s does not match the history", key)}
		}
		next := st.Next(msgs, ev.Compaction.To-off, ev.Text)
		r.mu.Lock()
		cs.State = next
		r.mu.Unlock()
		return next.View(msgs), nil
	}
	if _, done := r.recorded[tkey+"/model"]; done {
		return st.View(msgs), nil // the step was made without compacting
	}
	view, cut := cc.Plan(st, ap.system, ap.toolDefs, msgs)
	if cut == nil {
		return view, nil
	}
	summary, usage, err := r.summarize(ctx, ap, cc, cc.Transcript(cut.Prev, msgs[cut.From:cut.To]))
	if err != nil {
		return nil, err
	}
	next := st.Next(msgs, cut.To, summary)
	after := compact.Estimate(ap.system, ap.toolDefs, next.View(msgs))
	ev := Event{Type: EventCompacted, Key: key, Agent: ap.name, Turn: turn, Text: summary, Usage: &usage,
		Compaction: &compact.Info{From: cut.From + off, To: cut.To + off, TokensBefore: cut.TokensBefore, TokensAfter: after}}
	r.mu.Lock()
	total := r.usage.Add(usage)
	r.mu.Unlock()
	if err := r.append(ctx, []Event{ev}, store.Update{Usage: &total}, ap); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.usage = total
	cs.State = next
	r.mu.Unlock()
	return next.View(msgs), nil
}

// summarize asks ap's model for a summary of transcript (see
// compact.Config.Transcript).
func (r *runner) summarize(ctx context.Context, ap *agentPlan, cc *compact.Config, transcript string) (string, model.Usage, error) {
	req := &model.Request{Agent: ap.name + "_compact", RunID: r.id, System: cc.Instructions,
		Messages: []model.Message{{Role: model.RoleUser, Content: transcript}}}
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

// planCompaction resolves the compaction of each agent of p: its own, or
// the swarm's.
func (p *plan) planCompaction(swarmC *compact.Config) error {
	if err := p.root.setCompaction(swarmC, nil); err != nil {
		return err
	}
	for name, ap := range p.agents {
		var own *compact.Config
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
func (ap *agentPlan) setCompaction(outer, own *compact.Config) error {
	c := outer
	if own != nil {
		c = own
	}
	rc, err := c.Resolve(ap.modelSpec)
	if err != nil {
		return fmt.Errorf("%s: %w: compaction: %w", ap.name, ErrInvalid, err)
	}
	ap.compaction = rc
	return nil
}
