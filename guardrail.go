package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// The engine's side of guardrails (their types are in package guardrail):
// each agent's guardrails by point, the checks of a run's steps, and the
// verdicts journaled before the steps they decide proceed.

// guards are an agent's guardrails by point, in order.
type guards map[guardrail.Point][]*guardrail.Guardrail

func (g guards) at(p guardrail.Point) []*guardrail.Guardrail { return g[p] }

// planGuards gives each agent of p the swarm's guardrails and its own.
func (p *plan) planGuards(swarmGuards []guardrail.Guardrail) error {
	if err := p.root.addGuards(swarmGuards); err != nil {
		return err
	}
	for name, ap := range p.agents {
		if err := ap.addGuards(swarmGuards); err != nil {
			return err
		}
		if src, ok := p.srcs[name]; ok && src.agent != nil {
			if err := ap.addGuards(src.agent.Guardrails); err != nil {
				return err
			}
		}
	}
	return nil
}

// addGuards adds gs to ap's guardrails, after those it has.
func (ap *agentPlan) addGuards(gs []guardrail.Guardrail) error {
	for i := range gs {
		g := &gs[i]
		if err := g.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if ap.guards == nil {
			ap.guards = guards{}
		}
		for _, pt := range g.Points {
			// A guardrail named twice (by the swarm and the agent)
			// checks once: its verdicts are journaled by name.
			if !slices.ContainsFunc(ap.guards[pt], func(o *guardrail.Guardrail) bool { return o.Name == g.Name }) {
				ap.guards[pt] = append(ap.guards[pt], g)
			}
		}
	}
	return nil
}

// errGuardPaused: a guardrail paused the run for a human.
var errGuardPaused = errors.New("paused by a guardrail")

// guardError fails the run: a guardrail tripped.
type guardError struct{ reason string }

func (e *guardError) Error() string { return e.reason }

func guardReason(g *guardrail.Guardrail, v guardrail.Verdict) string {
	msg := v.Message
	if msg == "" {
		msg = string(v.Action)
	}
	return clip("guardrail "+g.Name+": "+msg, 2000)
}

// runCheck decides one step with g (see [guardrail.Guardrail.Decide]),
// in a span of its own.
func (r *runner) runCheck(ctx context.Context, g *guardrail.Guardrail, c guardrail.Check) guardrail.Verdict {
	ctx, end := r.traceGuard(ctx, g, c)
	v := g.Decide(ctx, c)
	end(v)
	return v
}

// verdictEvent is the journal record of a verdict.
func verdictEvent(key, agent string, g *guardrail.Guardrail, c guardrail.Check, v guardrail.Verdict) Event {
	return Event{Type: EventGuardrail, Key: key, Agent: agent, Guardrail: g.Name, Kind: string(c.Point), Verdict: string(v.Action),
		Reason: v.Message, Tool: c.Tool, CallID: c.CallID, Target: c.Target}
}

// recordedVerdict returns the verdict at point pt journaled under key, if
// any.
func (r *runner) recordedVerdict(key string, pt guardrail.Point) (guardrail.Verdict, bool, error) {
	rec, ok := r.recorded[key]
	if !ok {
		return guardrail.Verdict{}, false, nil
	}
	ev, err := decodeEvent(rec)
	if err != nil {
		return guardrail.Verdict{}, false, &seam.Interrupted{Err: err}
	}
	if ev.Kind != string(pt) {
		return guardrail.Verdict{}, false, nil
	}
	return guardrail.Verdict{Action: guardrail.Action(ev.Verdict), Message: ev.Reason}, true, nil
}

// verdictKey is the journal key of g's verdict at point pt of a step whose
// verdicts go under prefix ("<step>/guard/"). A result's verdict has a key
// of its own ("<step>/guard/<name>/result"): one guardrail may check both
// a call and its result, which share the step's key.
func verdictKey(prefix string, g *guardrail.Guardrail, pt guardrail.Point) string {
	if pt == guardrail.ToolResult || pt == guardrail.HandoffResult {
		return prefix + g.Name + "/result"
	}
	return prefix + g.Name
}

// judge applies the guardrails of point to step c, whose verdicts are
// journaled under prefix (see verdictKey): it returns the first verdict
// other than Allow, with its guardrail and journal key, or Allow. Each
// verdict is appended before the next check; a recorded verdict is
// reused, never checked again. A Pause whose answer the journal holds
// counts as Allow (a human approved).
func (r *runner) judge(ctx context.Context, ap *agentPlan, prefix string, c guardrail.Check) (guardrail.Verdict, *guardrail.Guardrail, string, error) {
	for _, g := range ap.guards.at(c.Point) {
		key := verdictKey(prefix, g, c.Point)
		v, ok, err := r.recordedVerdict(key, c.Point)
		if !ok && err == nil && key != prefix+g.Name {
			// Journals written before a result's verdict had a key of
			// its own hold it under the call's; its point tells it from
			// the call's verdict.
			if v, ok, err = r.recordedVerdict(prefix+g.Name, c.Point); ok {
				key = prefix + g.Name
			}
		}
		if err != nil {
			return guardrail.Verdict{}, nil, "", err
		}
		if !ok {
			v = r.runCheck(ctx, g, c)
			if err := r.append(ctx, []Event{verdictEvent(key, ap.name, g, c, v)}, store.Update{}, ap); err != nil {
				return guardrail.Verdict{}, nil, "", err
			}
		}
		if v.Action == guardrail.Pause {
			if _, answered := r.recorded[key+"/pause/resumed"]; answered {
				continue
			}
		}
		if v.Action != guardrail.Allow {
			return v, g, key, nil
		}
	}
	return guardrail.Verdict{Action: guardrail.Allow}, nil, "", nil
}

// guardPause is the pause event of a Pause verdict journaled under key.
func guardPause(key string, ap *agentPlan, g *guardrail.Guardrail, v guardrail.Verdict) *Event {
	return &Event{Type: EventPaused, Key: key + "/pause", Agent: ap.name, Kind: guardrailKind, Reason: guardReason(g, v),
		Context: "Resume to approve the step; stop the run to refuse it."}
}

// guardrailKind marks a pause caused by a guardrail.
const guardrailKind = "guardrail"

// guardInput checks the run's input once, before its strategy starts.
func (r *runner) guardInput(ctx context.Context) (outcome, bool) {
	v, g, out, stop := r.guardText(ctx, r.plan.root, "input", r.info.inputText(r.input), r.parts...)
	if v.Action == guardrail.Reject {
		return outcome{kind: failed, reason: guardReason(g, v), abort: true}, true
	}
	return out, stop
}

// guardText checks an input of ap (the run's, or a user message), whose
// verdicts are journaled under key+"/guard/". stop reports an outcome that
// ends the drive: an error, a pause (journaled here) or a tripwire; else
// the verdict is Allow or Reject (with its guardrail).
func (r *runner) guardText(ctx context.Context, ap *agentPlan, key, text string, parts ...model.Part) (guardrail.Verdict, *guardrail.Guardrail, outcome, bool) {
	if len(ap.guards.at(guardrail.Input)) == 0 {
		return guardrail.Verdict{Action: guardrail.Allow}, nil, outcome{}, false
	}
	c := guardrail.Check{Point: guardrail.Input, RunID: r.id, Agent: ap.name, Text: text, Parts: parts}
	v, g, vkey, err := r.judge(ctx, ap, key+"/guard/", c)
	switch {
	case err != nil:
		return v, g, outcome{kind: interrupted, err: err}, true
	case v.Action == guardrail.Allow, v.Action == guardrail.Reject:
		return v, g, outcome{}, false
	case v.Action == guardrail.Pause:
		ev := guardPause(vkey, ap, g, v)
		if _, waiting := r.recorded[ev.Key]; !waiting {
			if err := r.append(ctx, []Event{*ev}, store.Update{State: store.Paused, Reason: ev.Reason}, ap); err != nil {
				return v, g, outcome{kind: interrupted, err: err}, true
			}
		}
		return v, g, outcome{kind: paused}, true
	}
	return v, g, outcome{kind: failed, reason: guardReason(g, v), abort: true}, true
}

// guardCall checks a tool call or handoff of round rd before it runs. stop
// reports that res is the call's outcome.
func (r *runner) guardCall(ctx context.Context, rd *round, key string, c model.ToolCall) (res callResult, stop bool) {
	ap := rd.ap
	pt, target := guardrail.ToolCall, ""
	if t, ok := ap.handoffs[c.Name]; ok {
		pt, target = guardrail.Handoff, t
	} else if ct, ok := ap.children[c.Name]; ok {
		pt, target = guardrail.Handoff, ct.swarm
	}
	if len(ap.guards.at(pt)) == 0 {
		return callResult{}, false
	}
	check := guardrail.Check{Point: pt, RunID: r.id, Agent: ap.name, Tool: c.Name, CallID: c.ID, Arguments: c.Arguments, Target: target}
	if target != "" {
		var args struct {
			Request string `json:"request"`
		}
		_ = json.Unmarshal(c.Arguments, &args)
		check.Text = args.Request
	}
	v, g, vkey, err := r.judge(ctx, ap, key+"/guard/", check)
	switch {
	case err != nil:
		return callResult{err: err}, true
	case v.Action == guardrail.Allow:
		return callResult{}, false
	case v.Action == guardrail.Reject:
		what := "call"
		if target != "" {
			what = "handoff"
		}
		return r.recordResult(ctx, rd, key, c, "error: guardrail "+g.Name+" rejected this "+what+": "+v.Message, true), true
	case v.Action == guardrail.Pause:
		return callResult{childPause: guardPause(vkey, ap, g, v)}, true
	}
	return callResult{abort: guardReason(g, v)}, true
}

// guardResult checks a tool's or handoff's output before it is journaled
// as the call's result. It returns the output to record, and an outcome
// other than recording it (a tripwire), if any; pause is the pause to
// surface once the result is recorded.
func (r *runner) guardResult(ctx context.Context, ap *agentPlan, key string, pt guardrail.Point, c model.ToolCall, target, output string, isError bool, parts ...model.Part) (string, bool, *callResult, *Event) {
	if len(ap.guards.at(pt)) == 0 {
		return output, isError, nil, nil
	}
	check := guardrail.Check{Point: pt, RunID: r.id, Agent: ap.name, Tool: c.Name, CallID: c.ID, Arguments: c.Arguments, Target: target, Text: output, IsError: isError, Parts: parts}
	v, g, vkey, err := r.judge(ctx, ap, key+"/guard/", check)
	switch {
	case err != nil:
		return "", false, &callResult{err: err}, nil
	case v.Action == guardrail.Allow:
		return output, isError, nil, nil
	case v.Action == guardrail.Reject:
		return "error: guardrail " + g.Name + " rejected the result: " + v.Message, true, nil, nil
	case v.Action == guardrail.Pause:
		return output, isError, nil, guardPause(vkey, ap, g, v)
	}
	return "", false, &callResult{abort: guardReason(g, v)}, nil
}

// recordGuarded records a tool's outcome after the guardrail.ToolResult check.
func (r *runner) recordGuarded(ctx context.Context, rd *round, key string, c model.ToolCall, output string, isError bool, ci *callInfo) callResult {
	var parts []model.Part
	if ci != nil {
		parts = ci.parts
	}
	given := output
	output, isError, stop, pause := r.guardResult(ctx, rd.ap, key, guardrail.ToolResult, c, "", output, isError, parts...)
	if stop != nil {
		return *stop
	}
	if output != given && ci != nil {
		ci.parts = nil // a rejected result is replaced, its parts too
	}
	res := r.recordResultWith(ctx, rd, key, c, output, isError, ci)
	if res.err == nil && pause != nil {
		res.childPause = pause
	}
	return res
}

// outputGuard is the guardrail.Output check of one model step attempt.
type outputGuard struct {
	hold bool // the swarm holds streamed text back until the check passes
	// From the check (or the journal):
	verdict guardrail.Verdict
	g       *guardrail.Guardrail
	evs     []Event // verdicts to journal with the response
	held    []Event // deltas held back
}

// check runs the output guardrails on resp, stopping at the first verdict
// other than Allow. Verdicts go in og.evs, journaled with the response.
func (og *outputGuard) check(ctx context.Context, r *runner, ap *agentPlan, key string, resp *model.Response) {
	og.verdict, og.g, og.evs = guardrail.Verdict{Action: guardrail.Allow}, nil, nil
	c := guardrail.Check{Point: guardrail.Output, RunID: r.id, Agent: ap.name, Text: resp.Message.Content, ToolCalls: resp.Message.ToolCalls}
	for _, g := range ap.guards.at(guardrail.Output) {
		v := r.runCheck(ctx, g, c)
		og.evs = append(og.evs, verdictEvent(key+"/guard/"+g.Name, ap.name, g, c, v))
		if v.Action != guardrail.Allow {
			og.verdict, og.g = v, g
			return
		}
	}
}

// recall restores the verdicts recorded with the response under key.
func (og *outputGuard) recall(r *runner, ap *agentPlan, key string) error {
	og.verdict, og.g = guardrail.Verdict{Action: guardrail.Allow}, nil
	for _, g := range ap.guards.at(guardrail.Output) {
		v, ok, err := r.recordedVerdict(key+"/guard/"+g.Name, guardrail.Output)
		if err != nil {
			return err
		}
		if ok && v.Action != guardrail.Allow {
			og.verdict, og.g = v, g
			return nil
		}
	}
	return nil
}

// guardedModelStep is modelStep for an agent with output guardrails: a
// rejected response is journaled with its verdict and answered with the
// rejection, and the model asked again (under tkey+"/model/retry<n>"),
// at most guardrail.MaxRetries times; a tripwire fails the run; a pause waits
// for a human, whose resume approves the response.
func (r *runner) guardedModelStep(ctx context.Context, ap *agentPlan, tkey string, turn int, msgs []model.Message, x *stepExtra) (*model.Response, error) {
	for attempt := 0; ; attempt++ {
		key := tkey + "/model"
		if attempt > 0 {
			key += "/retry" + strconv.Itoa(attempt)
		}
		og := &outputGuard{hold: r.plan.holdStream}
		resp, err := r.modelCall(ctx, ap, key, turn, msgs, og, x)
		x = nil // journaled with the first attempt
		if err != nil {
			return nil, err
		}
		v, g := og.verdict, og.g
		switch v.Action {
		case guardrail.Allow:
			return resp, nil
		case guardrail.Tripwire:
			return nil, &guardError{reason: guardReason(g, v)}
		case guardrail.Pause:
			pkey := key + "/guard/" + g.Name + "/pause"
			if _, ok := r.recorded[pkey+"/resumed"]; ok {
				return resp, nil
			}
			ev := guardPause(key+"/guard/"+g.Name, ap, g, v)
			if _, waiting := r.recorded[pkey]; !waiting {
				u := store.Update{State: store.Paused, Reason: ev.Reason}
				if ap.root {
					u.Turn = turn
				}
				if err := r.append(ctx, []Event{*ev}, u, ap); err != nil {
					return nil, err
				}
			}
			return nil, errGuardPaused
		}
		// Reject.
		if attempt >= guardrail.MaxRetries {
			return nil, &guardError{reason: guardReason(g, guardrail.Verdict{Message: fmt.Sprintf("rejected %d responses in a row; the last: %s", attempt+1, v.Message)})}
		}
		msgs = append(slices0(msgs), resp.Message)
		note := "Your reply was rejected by guardrail " + g.Name + ": " + v.Message
		for _, c := range resp.Message.ToolCalls {
			msgs = append(msgs, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "error: not run: " + note, IsError: true})
		}
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: note + ". Reply again."})
	}
}

// slices0 copies msgs so that appending never writes into the caller's
// backing array.
func slices0(msgs []model.Message) []model.Message {
	return append(make([]model.Message, 0, len(msgs)+4), msgs...)
}
