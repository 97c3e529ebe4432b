package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// GuardPoint names where in a run a guardrail checks.
type GuardPoint string

// The points a guardrail can check.
const (
	// GuardInput checks the run's input before the first model call and,
	// in a conversation or a team's lead, each user message before it is
	// answered (a rejected message gets a failed turn as its answer).
	GuardInput GuardPoint = "input"
	// GuardOutput checks each model response of the agents it guards
	// (text and tool calls), the final output included, before the
	// response is acted on.
	GuardOutput GuardPoint = "output"
	// GuardToolCall checks a tool call before the tool runs.
	GuardToolCall GuardPoint = "tool_call"
	// GuardToolResult checks a tool's result before the model sees it.
	GuardToolResult GuardPoint = "tool_result"
	// GuardHandoff checks a handoff (to an agent or a swarm) before it
	// starts.
	GuardHandoff GuardPoint = "handoff"
	// GuardHandoffResult checks what an agent or a swarm handed off to
	// returns before the delegating model sees it.
	GuardHandoffResult GuardPoint = "handoff_result"
)

// Action is what a guardrail decides.
type Action string

// The actions of a [Verdict].
const (
	// Allow lets the step proceed.
	Allow Action = "allow"
	// Reject refuses the step but lets the run go on: a rejected model
	// response is answered with the verdict's message and the model gets
	// another attempt (at most [MaxGuardRetries] in a row); a rejected
	// tool call or handoff gets the message as its error result; a
	// rejected result is replaced by the message as an error result. A
	// rejected input fails the run (there is no model turn to give); a
	// rejected user message of a conversation or a team's lead is
	// answered with a failed turn whose reason is the rejection.
	Reject Action = "reject"
	// Tripwire fails the run at once with the reason
	// "guardrail <name>: <message>".
	Tripwire Action = "tripwire"
	// Pause pauses the run for a human, with the reason
	// "guardrail <name>: <message>". Resuming it approves the step, which
	// then proceeds as if allowed.
	Pause Action = "pause"
)

// MaxGuardRetries is how many rejected responses in a row one model step
// may have before the run fails with the last rejection's reason.
const MaxGuardRetries = 3

// Verdict is a guardrail's decision.
type Verdict struct {
	Action Action `json:"verdict"`
	// Message explains a verdict other than Allow (to the model for
	// Reject, in the run's reason otherwise).
	Message string `json:"message,omitempty"`
}

// GuardCheck is what a guardrail looks at. The fields used depend on Point.
type GuardCheck struct {
	Point GuardPoint `json:"point"`
	RunID string     `json:"run_id"`
	// Agent is the agent whose step is checked (the swarm's id for its
	// orchestrator).
	Agent string `json:"agent"`
	// Text is the input (GuardInput, as text), the response's text
	// (GuardOutput), the tool's or handoff's output (the result points)
	// or the handoff's request (GuardHandoff).
	Text string `json:"text,omitempty"`
	// ToolCalls are the response's tool calls (GuardOutput).
	ToolCalls []model.ToolCall `json:"tool_calls,omitempty"`
	// Tool, CallID and Arguments describe the call (the tool and handoff
	// points).
	Tool      string          `json:"tool,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Target is the agent or swarm of a handoff.
	Target string `json:"target,omitempty"`
	// IsError marks an error result (the result points).
	IsError bool `json:"is_error,omitempty"`

	// Parts are the images, files and audio of the input (GuardInput, the
	// run's input) or of a tool's result (GuardToolResult); a part kept as
	// a blob has its hash and size but not its bytes. A guardrail can
	// reject a step for its parts' types, sizes or names.
	Parts []model.Part `json:"parts,omitempty"`
}

// Guardrail is a check of a run's steps: a Go function, or a command
// defined in swarm.yaml. Guardrails of a [Spec] guard every agent of the
// run; guardrails of an [Agent] guard that agent only (after the swarm's).
//
// Each verdict is journaled as a guardrail event before the step it
// decides proceeds, so a recovered run never checks a recorded step again.
// A check that returns an error trips the run (it fails closed).
type Guardrail struct {
	// Name identifies the guardrail in events, reasons and spans.
	Name string
	// Points are where it checks (see [GuardPoint]).
	Points []GuardPoint
	// Check decides on one step. It must be safe for concurrent use
	// (the tool calls of one response are checked in parallel).
	Check func(ctx context.Context, c GuardCheck) (Verdict, error)
}

// guards are an agent's guardrails by point, in order.
type guards map[GuardPoint][]*Guardrail

func (g guards) at(p GuardPoint) []*Guardrail { return g[p] }

// checkGuardrail validates a guardrail's definition.
func checkGuardrail(g *Guardrail) error {
	if err := checkName(g.Name); err != nil {
		return fmt.Errorf("%w: guardrail: %w", ErrInvalid, err)
	}
	if g.Check == nil {
		return fmt.Errorf("%w: guardrail %s has no Check function", ErrInvalid, g.Name)
	}
	if len(g.Points) == 0 {
		return fmt.Errorf("%w: guardrail %s checks no point", ErrInvalid, g.Name)
	}
	for _, p := range g.Points {
		switch p {
		case GuardInput, GuardOutput, GuardToolCall, GuardToolResult, GuardHandoff, GuardHandoffResult:
		default:
			return fmt.Errorf("%w: guardrail %s: unknown point %q", ErrInvalid, g.Name, p)
		}
	}
	return nil
}

// planGuards gives each agent of p the swarm's guardrails and its own.
func (p *plan) planGuards(swarmGuards []Guardrail) error {
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
func (ap *agentPlan) addGuards(gs []Guardrail) error {
	for i := range gs {
		g := &gs[i]
		if err := checkGuardrail(g); err != nil {
			return err
		}
		if ap.guards == nil {
			ap.guards = guards{}
		}
		for _, pt := range g.Points {
			// A guardrail named twice (by the swarm and the agent)
			// checks once: its verdicts are journaled by name.
			if !slices.ContainsFunc(ap.guards[pt], func(o *Guardrail) bool { return o.Name == g.Name }) {
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

func guardReason(g *Guardrail, v Verdict) string {
	msg := v.Message
	if msg == "" {
		msg = string(v.Action)
	}
	return clip("guardrail "+g.Name+": "+msg, 2000)
}

// runCheck runs one guardrail, turning an error or a panic into a
// tripwire and an unknown action into a tripwire too (fail closed).
func (r *runner) runCheck(ctx context.Context, g *Guardrail, c GuardCheck) (v Verdict) {
	ctx, end := r.traceGuard(ctx, g, c)
	defer func() {
		if p := recover(); p != nil {
			v = Verdict{Action: Tripwire, Message: fmt.Sprintf("check panicked: %v\n%s", p, debug.Stack())}
		}
		end(v)
	}()
	v, err := g.Check(ctx, c)
	if err != nil {
		return Verdict{Action: Tripwire, Message: "check failed: " + err.Error()}
	}
	switch v.Action {
	case Allow, Reject, Tripwire, Pause:
	case "":
		v.Action = Allow
	default:
		return Verdict{Action: Tripwire, Message: fmt.Sprintf("unknown verdict %q", v.Action)}
	}
	return v
}

// verdictEvent is the journal record of a verdict.
func verdictEvent(key, agent string, g *Guardrail, c GuardCheck, v Verdict) Event {
	return Event{Type: EventGuardrail, Key: key, Agent: agent, Guardrail: g.Name, Kind: string(c.Point), Verdict: string(v.Action),
		Reason: v.Message, Tool: c.Tool, CallID: c.CallID, Target: c.Target}
}

// recordedVerdict returns the verdict at point pt journaled under key, if
// any.
func (r *runner) recordedVerdict(key string, pt GuardPoint) (Verdict, bool, error) {
	rec, ok := r.recorded[key]
	if !ok {
		return Verdict{}, false, nil
	}
	ev, err := decodeEvent(rec)
	if err != nil {
		return Verdict{}, false, &storeError{err}
	}
	if ev.Kind != string(pt) {
		return Verdict{}, false, nil
	}
	return Verdict{Action: Action(ev.Verdict), Message: ev.Reason}, true, nil
}

// verdictKey is the journal key of g's verdict at point pt of a step whose
// verdicts go under prefix ("<step>/guard/"). A result's verdict has a key
// of its own ("<step>/guard/<name>/result"): one guardrail may check both
// a call and its result, which share the step's key.
func verdictKey(prefix string, g *Guardrail, pt GuardPoint) string {
	if pt == GuardToolResult || pt == GuardHandoffResult {
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
func (r *runner) judge(ctx context.Context, ap *agentPlan, prefix string, c GuardCheck) (Verdict, *Guardrail, string, error) {
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
			return Verdict{}, nil, "", err
		}
		if !ok {
			v = r.runCheck(ctx, g, c)
			if err := r.append(ctx, []Event{verdictEvent(key, ap.name, g, c, v)}, store.Update{}, ap); err != nil {
				return Verdict{}, nil, "", err
			}
		}
		if v.Action == Pause {
			if _, answered := r.recorded[key+"/pause/resumed"]; answered {
				continue
			}
		}
		if v.Action != Allow {
			return v, g, key, nil
		}
	}
	return Verdict{Action: Allow}, nil, "", nil
}

// guardPause is the pause event of a Pause verdict journaled under key.
func guardPause(key string, ap *agentPlan, g *Guardrail, v Verdict) *Event {
	return &Event{Type: EventPaused, Key: key + "/pause", Agent: ap.name, Kind: guardrailKind, Reason: guardReason(g, v),
		Context: "Resume to approve the step; stop the run to refuse it."}
}

// guardrailKind marks a pause caused by a guardrail.
const guardrailKind = "guardrail"

// guardInput checks the run's input once, before its strategy starts.
func (r *runner) guardInput(ctx context.Context) (outcome, bool) {
	v, g, out, stop := r.guardText(ctx, r.plan.root, "input", r.info.inputText(r.input), r.parts...)
	if v.Action == Reject {
		return outcome{kind: failed, reason: guardReason(g, v), abort: true}, true
	}
	return out, stop
}

// guardText checks an input of ap (the run's, or a user message), whose
// verdicts are journaled under key+"/guard/". stop reports an outcome that
// ends the drive: an error, a pause (journaled here) or a tripwire; else
// the verdict is Allow or Reject (with its guardrail).
func (r *runner) guardText(ctx context.Context, ap *agentPlan, key, text string, parts ...model.Part) (Verdict, *Guardrail, outcome, bool) {
	if len(ap.guards.at(GuardInput)) == 0 {
		return Verdict{Action: Allow}, nil, outcome{}, false
	}
	c := GuardCheck{Point: GuardInput, RunID: r.id, Agent: ap.name, Text: text, Parts: parts}
	v, g, vkey, err := r.judge(ctx, ap, key+"/guard/", c)
	switch {
	case err != nil:
		return v, g, outcome{kind: interrupted, err: err}, true
	case v.Action == Allow, v.Action == Reject:
		return v, g, outcome{}, false
	case v.Action == Pause:
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
	pt, target := GuardToolCall, ""
	if t, ok := ap.handoffs[c.Name]; ok {
		pt, target = GuardHandoff, t
	} else if ct, ok := ap.children[c.Name]; ok {
		pt, target = GuardHandoff, ct.swarm
	}
	if len(ap.guards.at(pt)) == 0 {
		return callResult{}, false
	}
	check := GuardCheck{Point: pt, RunID: r.id, Agent: ap.name, Tool: c.Name, CallID: c.ID, Arguments: c.Arguments, Target: target}
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
	case v.Action == Allow:
		return callResult{}, false
	case v.Action == Reject:
		what := "call"
		if target != "" {
			what = "handoff"
		}
		return r.recordResult(ctx, rd, key, c, "error: guardrail "+g.Name+" rejected this "+what+": "+v.Message, true), true
	case v.Action == Pause:
		return callResult{childPause: guardPause(vkey, ap, g, v)}, true
	}
	return callResult{abort: guardReason(g, v)}, true
}

// guardResult checks a tool's or handoff's output before it is journaled
// as the call's result. It returns the output to record, and an outcome
// other than recording it (a tripwire), if any; pause is the pause to
// surface once the result is recorded.
func (r *runner) guardResult(ctx context.Context, ap *agentPlan, key string, pt GuardPoint, c model.ToolCall, target, output string, isError bool, parts ...model.Part) (string, bool, *callResult, *Event) {
	if len(ap.guards.at(pt)) == 0 {
		return output, isError, nil, nil
	}
	check := GuardCheck{Point: pt, RunID: r.id, Agent: ap.name, Tool: c.Name, CallID: c.ID, Arguments: c.Arguments, Target: target, Text: output, IsError: isError, Parts: parts}
	v, g, vkey, err := r.judge(ctx, ap, key+"/guard/", check)
	switch {
	case err != nil:
		return "", false, &callResult{err: err}, nil
	case v.Action == Allow:
		return output, isError, nil, nil
	case v.Action == Reject:
		return "error: guardrail " + g.Name + " rejected the result: " + v.Message, true, nil, nil
	case v.Action == Pause:
		return output, isError, nil, guardPause(vkey, ap, g, v)
	}
	return "", false, &callResult{abort: guardReason(g, v)}, nil
}

// recordGuarded records a tool's outcome after the GuardToolResult check.
func (r *runner) recordGuarded(ctx context.Context, rd *round, key string, c model.ToolCall, output string, isError bool, ci *callInfo) callResult {
	var parts []model.Part
	if ci != nil {
		parts = ci.parts
	}
	given := output
	output, isError, stop, pause := r.guardResult(ctx, rd.ap, key, GuardToolResult, c, "", output, isError, parts...)
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

// outputGuard is the GuardOutput check of one model step attempt.
type outputGuard struct {
	hold bool // the swarm holds streamed text back until the check passes
	// From the check (or the journal):
	verdict Verdict
	g       *Guardrail
	evs     []Event // verdicts to journal with the response
	held    []Event // deltas held back
}

// check runs the output guardrails on resp, stopping at the first verdict
// other than Allow. Verdicts go in og.evs, journaled with the response.
func (og *outputGuard) check(ctx context.Context, r *runner, ap *agentPlan, key string, resp *model.Response) {
	og.verdict, og.g, og.evs = Verdict{Action: Allow}, nil, nil
	c := GuardCheck{Point: GuardOutput, RunID: r.id, Agent: ap.name, Text: resp.Message.Content, ToolCalls: resp.Message.ToolCalls}
	for _, g := range ap.guards.at(GuardOutput) {
		v := r.runCheck(ctx, g, c)
		og.evs = append(og.evs, verdictEvent(key+"/guard/"+g.Name, ap.name, g, c, v))
		if v.Action != Allow {
			og.verdict, og.g = v, g
			return
		}
	}
}

// recall restores the verdicts recorded with the response under key.
func (og *outputGuard) recall(r *runner, ap *agentPlan, key string) error {
	og.verdict, og.g = Verdict{Action: Allow}, nil
	for _, g := range ap.guards.at(GuardOutput) {
		v, ok, err := r.recordedVerdict(key+"/guard/"+g.Name, GuardOutput)
		if err != nil {
			return err
		}
		if ok && v.Action != Allow {
			og.verdict, og.g = v, g
			return nil
		}
	}
	return nil
}

// guardedModelStep is modelStep for an agent with output guardrails: a
// rejected response is journaled with its verdict and answered with the
// rejection, and the model asked again (under tkey+"/model/retry<n>"),
// at most MaxGuardRetries times; a tripwire fails the run; a pause waits
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
		case Allow:
			return resp, nil
		case Tripwire:
			return nil, &guardError{reason: guardReason(g, v)}
		case Pause:
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
		if attempt >= MaxGuardRetries {
			return nil, &guardError{reason: guardReason(g, Verdict{Message: fmt.Sprintf("rejected %d responses in a row; the last: %s", attempt+1, v.Message)})}
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
