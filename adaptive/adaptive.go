// Package adaptive is the adaptive loop, MagenticOne's orchestrator made
// durable, as a [strategy.Strategy]: the orchestrator keeps a task ledger
// (facts and a plan), then each round judges progress in a progress ledger
// and hands one team member (one of the swarm's handoffs) an instruction.
// A stall counter triggers replans, and replans that run out escalate to a
// human plan review or a failure. Every ledger is a journal record, so a
// recovered run continues with the same counters, facts and plan.
//
// Give a swarm the loop in its Spec:
//
//	swarm.Spec{Handoffs: team, Strategy: strategy.Of(adaptive.New().WithEvaluator("critic").WithStallThreshold(3))}
//
// or, in swarm.yaml, loop: {strategy: adaptive, ...}. The package is
// written only against the public strategy seam, package strategy.
package adaptive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/strategy"
)

// The strategy's interfaces.
var (
	_ strategy.Strategy = (*Strategy)(nil)
	_ strategy.Checker  = (*Strategy)(nil)
)

// Exhausted says what an adaptive run does when its replans are used up.
type Exhausted string

// What an adaptive run does when its replans are used up.
const (
	// ExhaustedPause pauses the run for a human plan review: the resume
	// message is feedback for a new plan, or a JSON object
	// {"plan": [...], "facts": {...}} that replaces them.
	ExhaustedPause Exhausted = "pause"
	// ExhaustedFail fails the run with a reason that starts with
	// "adaptive max_replans:".
	ExhaustedFail Exhausted = "fail"
)

// The defaults of an adaptive loop.
const (
	DefaultStallThreshold = 3
	DefaultMaxReplans     = 2
	DefaultMaxRounds      = 20
)

// Strategy is the adaptive loop with its settings, a [strategy.Strategy] (and
// a [strategy.Checker]). Build one with [New]. An adaptive orchestrator only
// plans and delegates: a swarm with an adaptive loop may not give its
// orchestrator tools or registry access (give them to a team member), and
// its swarm handoffs must take text input (they receive the ledger's
// instructions). A run of a swarm that breaks these rules is refused when
// it starts.
type Strategy struct {
	// Evaluator names one of the swarm's agent handoffs that judges each
	// round's progress instead of the orchestrator. The orchestrator does
	// not hand work to it.
	Evaluator string
	// StallThreshold is the stall count that triggers a replan
	// (DefaultStallThreshold when zero).
	StallThreshold int
	// MaxReplans bounds the replans before the run escalates
	// (DefaultMaxReplans when zero; -1 for none).
	MaxReplans int
	// MaxRounds bounds the rounds of the whole run, replans included
	// (DefaultMaxRounds when zero; the swarm's MaxTurns does not apply).
	MaxRounds int
	// OnExhausted is what happens when the replans are used up
	// (ExhaustedPause when empty).
	OnExhausted Exhausted
}

// New returns an adaptive loop with the default settings.
func New() *Strategy { return &Strategy{} }

// WithEvaluator returns s with agent judging progress (see
// Strategy.Evaluator).
func (s *Strategy) WithEvaluator(agent string) *Strategy { c := *s; c.Evaluator = agent; return &c }

// WithStallThreshold returns s with the stall count that triggers a replan.
func (s *Strategy) WithStallThreshold(n int) *Strategy { c := *s; c.StallThreshold = n; return &c }

// WithMaxReplans returns s with the replans allowed before escalation.
func (s *Strategy) WithMaxReplans(n int) *Strategy { c := *s; c.MaxReplans = n; return &c }

// WithMaxRounds returns s with the rounds allowed over the whole run.
func (s *Strategy) WithMaxRounds(n int) *Strategy { c := *s; c.MaxRounds = n; return &c }

// OnExhaustedDo returns s with what happens when the replans are used up.
func (s *Strategy) OnExhaustedDo(e Exhausted) *Strategy { c := *s; c.OnExhausted = e; return &c }

// settings returns s with its defaults applied, or the setting out of
// range.
func (s *Strategy) settings() (Strategy, error) {
	c := *s
	switch {
	case c.StallThreshold < 0:
		return c, fmt.Errorf("%w: loop: stall_threshold %d is negative", swarm.ErrInvalid, c.StallThreshold)
	case c.MaxReplans < -1:
		return c, fmt.Errorf("%w: loop: max_replans %d is below -1", swarm.ErrInvalid, c.MaxReplans)
	case c.MaxRounds < 0:
		return c, fmt.Errorf("%w: loop: max_rounds %d is negative", swarm.ErrInvalid, c.MaxRounds)
	}
	switch c.OnExhausted {
	case "":
		c.OnExhausted = ExhaustedPause
	case ExhaustedPause, ExhaustedFail:
	default:
		return c, fmt.Errorf("%w: loop: on_exhausted %q (want %s or %s)", swarm.ErrInvalid, c.OnExhausted, ExhaustedPause, ExhaustedFail)
	}
	if c.StallThreshold == 0 {
		c.StallThreshold = DefaultStallThreshold
	}
	switch c.MaxReplans {
	case 0:
		c.MaxReplans = DefaultMaxReplans
	case -1:
		c.MaxReplans = 0
	}
	if c.MaxRounds == 0 {
		c.MaxRounds = DefaultMaxRounds
	}
	return c, nil
}

// Check refuses a swarm the loop cannot work with, and makes the run's
// bound its rounds: that is what its status reports.
func (s *Strategy) Check(d *strategy.Driver) (int, error) {
	c, err := s.settings()
	if err != nil {
		return 0, err
	}
	roster := d.Roster()
	if e := c.Evaluator; e != "" && !slices.ContainsFunc(roster, func(t strategy.Target) bool { return t.Name == e && !t.Swarm }) {
		return 0, fmt.Errorf("%w: loop: evaluator %q is not one of the swarm's agent handoffs", swarm.ErrInvalid, e)
	}
	if !slices.ContainsFunc(roster, func(t strategy.Target) bool { return t.Name != c.Evaluator }) {
		return 0, fmt.Errorf("%w: loop: an adaptive swarm needs at least one handoff to work with", swarm.ErrInvalid)
	}
	if len(d.ToolNames()) > 0 {
		return 0, fmt.Errorf("%w: loop: an adaptive orchestrator only plans and delegates; give its tools (absorbed agents, registry access) to a member of its team", swarm.ErrInvalid)
	}
	for _, t := range roster {
		if t.Swarm && !t.TextInput {
			return 0, fmt.Errorf("%w: loop: swarm %s takes a structured input, but an adaptive orchestrator hands text instructions (handoff_to_%s)", swarm.ErrInvalid, t.Name, t.Name)
		}
	}
	return c.MaxRounds, nil
}

const (
	// tries bounds the model calls for one ledger or final answer whose
	// replies are not valid.
	tries = 3
	// window is how many earlier rounds the deterministic stall signals
	// look back on.
	window = 4
)

// The reasons an adaptive run ends, which start its failure reasons.
const (
	exitSatisfied  = "satisfied"
	exitMaxRounds  = "max_rounds"
	exitMaxReplans = "max_replans"
)

// run is the state of one drive of an adaptive run. All of it is rebuilt
// by replaying the journal.
type run struct {
	Strategy
	d        *strategy.Driver
	task     string
	team     []string
	teamText string
	ledger   TaskLedger
	rounds   []round
	// stalls is the stall counter, replans the replans since the start or
	// the last plan review, reviews the plan reviews so far.
	stalls, replans, reviews int
}

// round is what one round did.
type round struct {
	n                          int
	agent, instruction, output string
	isError                    bool
}

// Drive runs the loop: a task ledger, then rounds until the request is
// satisfied or the rounds or replans run out.
func (s *Strategy) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	c, err := s.settings()
	if err != nil {
		return nil, err
	}
	x := &run{Strategy: c, d: d, task: inputText(d.Input())}
	var b strings.Builder
	for _, t := range d.Roster() {
		if t.Name == c.Evaluator {
			continue
		}
		x.team = append(x.team, t.Name)
		fmt.Fprintf(&b, "- %s: %s\n", t.Name, t.Description)
	}
	x.teamText = b.String()
	if err := x.newLedger(ctx, 0, "start", ""); err != nil {
		return nil, err
	}
	for n := 1; ; n++ {
		if n > c.MaxRounds {
			return x.exit(ctx, n, exitMaxRounds, fmt.Sprintf("no satisfying answer within %d rounds", c.MaxRounds))
		}
		pl, err := x.progress(ctx, n)
		if err != nil {
			return nil, x.ended(err)
		}
		if pl.Satisfied {
			return x.exit(ctx, n, exitSatisfied, "")
		}
		if pl.Replan {
			if res, err := x.replan(ctx, n); res != nil || err != nil {
				return res, err
			}
			continue
		}
		out, err := d.AtTurn(n).Delegate(ctx, "r"+strconv.Itoa(n), pl.NextHandoff, pl.Instruction)
		var f *strategy.Failure
		switch {
		case errors.As(err, &f) && !f.Ends():
			// The member failed: that is the round's answer.
			out = "error: " + f.Reason
		case err != nil:
			return nil, x.ended(err)
		}
		x.rounds = append(x.rounds, round{n: n, agent: pl.NextHandoff, instruction: pl.Instruction, output: out, isError: err != nil})
	}
}

// inputText is the task of a run: a text input as is, any other input as
// JSON.
func inputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// replan re-enters the outer loop in round n: a new task ledger, or, when
// the replans are used up, escalation (a plan review or a failure). A
// result or an error ends the run; a failure of an exit has quoted its
// best answer.
func (x *run) replan(ctx context.Context, n int) (json.RawMessage, error) {
	if x.replans < x.MaxReplans {
		return nil, x.ended(x.newLedger(ctx, n, "stall", ""))
	}
	detail := fmt.Sprintf("the run stalled %d times in a row after %d replans", x.stalls, x.replans)
	if x.OnExhausted == ExhaustedFail {
		return x.exit(ctx, n, exitMaxReplans, detail)
	}
	if n >= x.MaxRounds {
		// A review would have no round left to act on its answer.
		return x.exit(ctx, n, exitMaxRounds, fmt.Sprintf("no satisfying answer within %d rounds (%s)", x.MaxRounds, detail))
	}
	x.reviews++
	msg, err := x.d.AtTurn(n).Await(ctx, "review/"+strconv.Itoa(x.reviews), strategy.Question{Kind: "plan_review",
		Reason:  "adaptive " + exitMaxReplans + ": " + detail + "; review the plan (resume with feedback, or with {\"plan\": [...]} to replace it)",
		Context: x.ledger.text()})
	if err != nil {
		return nil, err
	}
	return nil, x.ended(x.newLedger(ctx, n, "review", msg))
}

// newLedger makes and records the task ledger of round n (0: the start)
// for cause, taking in a plan review's feedback. It adopts what the
// journal holds, so a replay continues with the recorded facts and plan.
func (x *run) newLedger(ctx context.Context, n int, cause, feedback string) error {
	number := x.ledger.Number + 1
	if cause == "start" {
		number = 0
	}
	key := "p" + strconv.Itoa(number)
	ev, err := x.d.AtTurn(n).RecordEvent(ctx, key+"/ledger", func(ctx context.Context) (swarm.Event, error) {
		next := TaskLedger{Facts: x.ledger.Facts, Plan: x.ledger.Plan, Number: number, Cause: cause, Feedback: feedback}
		if edited, ok := editedPlan(feedback); ok {
			next.Plan = edited.Plan
			if edited.Facts != nil {
				next.Facts = *edited.Facts
			}
		} else {
			parsed, err := x.ask(ctx, "", ledgerSchema, key, n, x.ledgerPrompt(cause, feedback), func(text string) error {
				var got struct {
					Facts Facts    `json:"facts"`
					Plan  []string `json:"plan"`
				}
				if err := decodeJSONReply(text, &got); err != nil {
					return err
				}
				if len(got.Plan) == 0 {
					return errors.New("the plan has no steps")
				}
				next.Facts, next.Plan = got.Facts, got.Plan
				return nil
			})
			if err != nil {
				return swarm.Event{}, err
			}
			if !parsed {
				next.Fallback = true
				if len(next.Plan) == 0 {
					next.Plan = []string{"Work on the task with " + strings.Join(x.team, ", ") + ", one at a time."}
				}
			}
		}
		next.Changes = planChanges(x.ledger.Plan, next.Plan)
		raw, err := json.Marshal(next)
		return swarm.Event{Type: EventLedger, Ledger: raw}, err
	})
	if err != nil {
		return err
	}
	l, ok := LedgerOf(ev)
	if !ok {
		return fmt.Errorf("run %s: ledger record %s has no ledger", x.d.RunID(), ev.Key)
	}
	x.ledger = l
	switch x.ledger.Cause {
	case "stall":
		x.replans++
	case "review":
		x.replans = 0
	}
	x.stalls = 0
	return nil
}

// planEdit is a plan review's answer that replaces the plan.
type planEdit struct {
	Plan  []string
	Facts *Facts
}

// editedPlan reads a plan review's answer that replaces the plan: a JSON
// object with a non-empty "plan" (a list of steps, or one text) and
// optionally "facts".
func editedPlan(feedback string) (planEdit, bool) {
	var raw struct {
		Plan  json.RawMessage `json:"plan"`
		Facts *Facts          `json:"facts"`
	}
	if !strings.HasPrefix(strings.TrimSpace(feedback), "{") || json.Unmarshal([]byte(feedback), &raw) != nil || len(raw.Plan) == 0 {
		return planEdit{}, false
	}
	out := planEdit{Facts: raw.Facts}
	if json.Unmarshal(raw.Plan, &out.Plan) != nil {
		var one string
		if json.Unmarshal(raw.Plan, &one) != nil || strings.TrimSpace(one) == "" {
			return planEdit{}, false
		}
		out.Plan = []string{one}
	}
	return out, len(out.Plan) > 0
}

// planChanges lists the steps removed from old ("- ") and added to new
// ("+ ").
func planChanges(old, new []string) []string {
	var out []string
	for _, s := range old {
		if !slices.Contains(new, s) {
			out = append(out, "- "+s)
		}
	}
	for _, s := range new {
		if !slices.Contains(old, s) {
			out = append(out, "+ "+s)
		}
	}
	return out
}

// progress asks for and records round n's progress ledger, with the stall
// counter after it.
func (x *run) progress(ctx context.Context, n int) (ProgressLedger, error) {
	tkey := "r" + strconv.Itoa(n)
	ev, err := x.d.AtTurn(n).RecordEvent(ctx, tkey+"/progress", func(ctx context.Context) (swarm.Event, error) {
		pl, err := x.judge(ctx, n, tkey)
		if err != nil {
			return swarm.Event{}, err
		}
		raw, err := json.Marshal(pl)
		return swarm.Event{Type: EventProgress, Progress: raw}, err
	})
	if err != nil {
		return ProgressLedger{}, err
	}
	pl, ok := ProgressOf(ev)
	if !ok {
		return pl, fmt.Errorf("run %s: progress record %s has no ledger", x.d.RunID(), ev.Key)
	}
	x.stalls = pl.Stalls
	return pl, nil
}

// judge asks for round n's progress ledger under tkey.
func (x *run) judge(ctx context.Context, n int, tkey string) (ProgressLedger, error) {
	pl := ProgressLedger{Round: n}
	var judged, picked bool
	var err error
	// check accepts a reply that judges (flags) and/or picks the next
	// step (pick), and copies what it accepts into pl.
	check := func(text string, flags, pick bool) error {
		var got ProgressLedger
		if err := decodeJSONReply(text, &got); err != nil {
			return err
		}
		if pick && !(flags && got.Satisfied) {
			if !slices.Contains(x.team, got.NextHandoff) {
				return fmt.Errorf("next_handoff %q is not one of: %s", got.NextHandoff, strings.Join(x.team, ", "))
			}
			if strings.TrimSpace(got.Instruction) == "" {
				return errors.New("the instruction is empty")
			}
			pl.NextHandoff, pl.Instruction = got.NextHandoff, got.Instruction
		}
		if flags {
			pl.Satisfied, pl.InLoop, pl.Progress, pl.Reason = got.Satisfied, got.InLoop, got.Progress, got.Reason
		}
		return nil
	}
	if e := x.Evaluator; e != "" {
		pl.Evaluator = e
		judged, err = x.ask(ctx, e, judgeSchema, tkey+"/judge", n, x.judgePrompt(), func(text string) error { return check(text, true, false) })
	} else {
		judged, err = x.ask(ctx, "", progressSchema, tkey+"/ledger", n, x.progressPrompt(), func(text string) error { return check(text, true, true) })
		picked = judged
	}
	if err != nil {
		return pl, err
	}
	if !judged {
		// No valid judgement: the round counts as a stall.
		pl.Fallback, pl.Satisfied, pl.InLoop, pl.Progress = true, false, false, false
	}
	pl.Signals = x.signals(n)
	progress := pl.Progress && !slices.Contains(pl.Signals, "no_new_info")
	loop := pl.InLoop || slices.Contains(pl.Signals, "repeat")
	pl.Stalls = x.stalls
	switch {
	case pl.Satisfied:
	case !progress || loop:
		pl.Stalls++
	case pl.Stalls > 0:
		pl.Stalls--
	}
	pl.Replan = !pl.Satisfied && pl.Stalls >= x.StallThreshold
	if !pl.Satisfied && !pl.Replan && !picked {
		if x.Evaluator != "" {
			picked, err = x.ask(ctx, "", pickSchema, tkey+"/pick", n, x.pickPrompt(), func(text string) error { return check(text, false, true) })
			if err != nil {
				return pl, err
			}
		}
		if !picked {
			// No valid pick: the team members take turns.
			pl.Fallback = true
			pl.NextHandoff, pl.Instruction = x.team[(n-1)%len(x.team)], x.task
		}
	}
	if pl.Replan || pl.Satisfied {
		pl.NextHandoff, pl.Instruction = "", ""
	}
	return pl, nil
}

// signals returns the deterministic stall signals of round n-1 against the
// window rounds before it (none when round n-1 ran no handoff: a round is
// judged once).
func (x *run) signals(n int) []string {
	if len(x.rounds) < 2 || x.rounds[len(x.rounds)-1].n != n-1 {
		return nil
	}
	last := x.rounds[len(x.rounds)-1]
	earlier := x.rounds[max(0, len(x.rounds)-1-window) : len(x.rounds)-1]
	var out []string
	if slices.ContainsFunc(earlier, func(o round) bool { return o.agent == last.agent && o.instruction == last.instruction }) {
		out = append(out, "repeat")
	}
	if slices.ContainsFunc(earlier, func(o round) bool { return o.output == last.output }) {
		out = append(out, "no_new_info")
	}
	return out
}

// exit ends the run in round n for code: the final-answer step synthesizes
// the result from the rounds, which completes the run when the request is
// satisfied; otherwise the run fails with a reason that starts "adaptive
// <code>:" and quotes the best answer.
func (x *run) exit(ctx context.Context, n int, code, detail string) (json.RawMessage, error) {
	var result json.RawMessage
	var text string
	parsed, err := x.ask(ctx, "", x.d.ResultSchema(), "final", n, x.finalPrompt(code, detail), func(t string) error {
		res, err := x.d.Result(t)
		if err == nil {
			result, text = res, t
		}
		return err
	})
	switch {
	case err != nil:
		return nil, x.ended(err)
	case code == exitSatisfied && parsed:
		return result, nil
	case code == exitSatisfied:
		return nil, &strategy.Failure{Reason: "adaptive " + code + ": the final answer is not a valid result after " + strconv.Itoa(tries) + " tries"}
	}
	reason := "adaptive " + code + ": " + detail
	if parsed {
		reason += "; best answer: " + clip(text, 1000)
	}
	return nil, &strategy.Failure{Reason: reason}
}

// ended adds the best answer so far to a failure that ends the run early
// (a budget): the final-answer step, made without calling a model.
func (x *run) ended(err error) error {
	var f *strategy.Failure
	if errors.As(err, &f) && len(x.rounds) > 0 {
		last := x.rounds[len(x.rounds)-1]
		f.Reason += "; best answer so far (" + last.agent + "): " + clip(last.output, 1000)
	}
	return err
}

// ask asks agent (the orchestrator when "") for a reply that check
// accepts, with schema as its structured output: up to tries model calls
// in round n, under tkey, tkey+"/2" and so on, each retry told what was
// wrong with the reply before. ok is false when none was accepted; an
// error stops the run (an interruption, a budget, or a model that fails).
func (x *run) ask(ctx context.Context, agent string, schema json.RawMessage, tkey string, n int, prompt string, check func(string) error) (bool, error) {
	o := strategy.AskOptions{Agent: agent, Schema: schema}
	if agent == "" {
		o.System = system
	}
	d := x.d.AtTurn(n)
	msgs := []model.Message{{Role: model.RoleUser, Content: prompt}}
	for try := 1; try <= tries; try++ {
		key := tkey
		if try > 1 {
			key += "/" + strconv.Itoa(try)
		}
		text, err := d.Ask(ctx, key, o, msgs)
		var f *strategy.Failure
		switch {
		case errors.As(err, &f) && !f.Ends():
			return false, &strategy.Failure{Reason: "adaptive: " + f.Reason}
		case err != nil:
			return false, err
		}
		err = check(text)
		if err == nil {
			return true, nil
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: text},
			model.Message{Role: model.RoleUser, Content: "That reply is not valid: " + err.Error() + ". Reply with only the JSON object."})
	}
	return false, nil
}

// decodeJSONReply decodes a model's JSON reply, allowing a code fence or
// text around the object.
func decodeJSONReply(text string, v any) error {
	t := strings.TrimSpace(text)
	if i, j := strings.IndexByte(t, '{'), strings.LastIndexByte(t, '}'); i >= 0 && j > i {
		t = t[i : j+1]
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(t)))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	return nil
}

// clip cuts s to about n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
