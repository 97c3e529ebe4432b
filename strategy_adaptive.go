package swarm

import (
	"bytes"
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

// TaskLedger is an adaptive run's outer-loop state (event "ledger"): what
// is known and the plan. A new one is recorded at the start, at each replan
// and after each human plan review.
type TaskLedger struct {
	// Facts are the facts given in the task, to look up, and derived.
	Facts Facts `json:"facts"`
	// Plan is the steps, in order.
	Plan []string `json:"plan"`
	// Number counts the ledgers of the run: 0 for the first.
	Number int `json:"number"`
	// Cause is why the ledger was made: "start", "stall" (a replan) or
	// "review" (a human answered a plan review).
	Cause string `json:"cause"`
	// Feedback is the human's answer a "review" ledger took in.
	Feedback string `json:"feedback,omitempty"`
	// Changes is what changed in the plan from the previous ledger: removed
	// steps prefixed "- ", added ones "+ ".
	Changes []string `json:"changes,omitempty"`
	// Fallback is set when the model gave no valid ledger and the previous
	// one was kept (or a minimal one made).
	Fallback bool `json:"fallback,omitempty"`
}

// Facts is a task ledger's fact sheet.
type Facts struct {
	Given    []string `json:"given,omitempty"`
	ToLookUp []string `json:"to_look_up,omitempty"`
	Derived  []string `json:"derived,omitempty"`
}

// ProgressLedger is an adaptive run's judgement of one round (event
// "progress"): whether the request is satisfied, whether the run loops or
// makes progress, who acts next with which instruction, and the stall
// counter after this round.
type ProgressLedger struct {
	Round       int    `json:"round"`
	Satisfied   bool   `json:"is_request_satisfied"`
	InLoop      bool   `json:"is_in_loop"`
	Progress    bool   `json:"is_progress_being_made"`
	NextHandoff string `json:"next_handoff,omitempty"`
	Instruction string `json:"instruction,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// Signals are the deterministic stall signals of the last round:
	// "repeat" (the same handoff with the same instruction as a round of
	// the window before it) and "no_new_info" (an answer the window had
	// already seen).
	Signals []string `json:"signals,omitempty"`
	// Stalls is the stall counter after this round: +1 when no progress
	// was made or the run is in a loop, -1 (not below 0) otherwise.
	Stalls int `json:"stalls"`
	// Evaluator is the agent that judged progress, when not the
	// orchestrator.
	Evaluator string `json:"evaluator,omitempty"`
	// Fallback is set when the model gave no valid ledger: the round
	// counts as a stall and the next agent is picked in turn.
	Fallback bool `json:"fallback,omitempty"`
	// Replan is set when the stall counter reached the threshold: the
	// round replans (or escalates) instead of handing off.
	Replan bool `json:"replan,omitempty"`
}

// DefaultMaxRounds bounds an adaptive run's rounds when Loop.MaxRounds is
// zero.
const DefaultMaxRounds = 20

const (
	// adaptiveTries bounds the model calls for one ledger or final answer
	// whose replies are not valid.
	adaptiveTries = 3
	// adaptiveWindow is how many earlier rounds the deterministic stall
	// signals look back on.
	adaptiveWindow = 4
)

// The reasons an adaptive run ends, which start its failure reasons.
const (
	exitSatisfied  = "satisfied"
	exitMaxRounds  = "max_rounds"
	exitMaxReplans = "max_replans"
)

// adaptive is the adaptive strategy: the outer loop makes a task ledger,
// the inner loop asks for a progress ledger each round and runs the handoff
// it names; a stall counter triggers replans, and replans that run out
// escalate. Every ledger is a journal record, so a recovered run continues
// with the same counters, facts and plan.
type adaptive struct{ cfg Loop }

// newAdaptive makes the adaptive strategy of loop l for a run of plan p.
func newAdaptive(l Loop, p *plan) (*adaptive, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	if l.StallThreshold == 0 {
		l.StallThreshold = DefaultStallThreshold
	}
	switch l.MaxReplans {
	case 0:
		l.MaxReplans = DefaultMaxReplans
	case -1:
		l.MaxReplans = 0
	}
	if l.MaxRounds == 0 {
		l.MaxRounds = DefaultMaxRounds
	}
	if l.OnExhausted == "" {
		l.OnExhausted = ExhaustedPause
	}
	// The run's bound is its rounds: that is what its status reports.
	p.root.maxTurns = l.MaxRounds
	a := &adaptive{cfg: l}
	if err := a.check(p); err != nil {
		return nil, err
	}
	return a, nil
}

// check validates the loop against the swarm's plan.
func (a *adaptive) check(p *plan) error {
	if e := a.cfg.Evaluator; e != "" {
		if _, ok := p.root.handoffs[handoffPre+e]; !ok {
			return fmt.Errorf("%w: loop: evaluator %q is not one of the swarm's agent handoffs", ErrInvalid, e)
		}
	}
	if team, _ := teamOf(p.root, a.cfg.Evaluator); len(team) == 0 {
		return fmt.Errorf("%w: loop: an adaptive swarm needs at least one handoff to work with", ErrInvalid)
	}
	if len(p.root.tools) > 0 || len(p.root.absorbed) > 0 || p.root.registry != nil {
		return fmt.Errorf("%w: loop: an adaptive orchestrator only plans and delegates; give its tools (absorbed agents, registry access) to a member of its team", ErrInvalid)
	}
	for tool, ct := range p.root.children {
		if !ct.info.textIn {
			return fmt.Errorf("%w: loop: swarm %s takes a structured input, but an adaptive orchestrator hands text instructions (%s)", ErrInvalid, ct.swarm, tool)
		}
	}
	return nil
}

// adaptiveRun is the state of one drive of an adaptive run. All of it is
// rebuilt by replaying the journal.
type adaptiveRun struct {
	*adaptive
	r        *runner
	root     *agentPlan
	task     string
	team     []string
	teamText string
	ledger   TaskLedger
	rounds   []adaptiveRound
	// stalls is the stall counter, replans the replans since the start or
	// the last plan review, reviews the plan reviews so far.
	stalls, replans, reviews int
}

// adaptiveRound is what one round did.
type adaptiveRound struct {
	n                          int
	agent, instruction, output string
	isError                    bool
}

func (a *adaptive) drive(ctx context.Context, r *runner) outcome {
	x := &adaptiveRun{adaptive: a, r: r, root: r.plan.root, task: r.info.inputText(r.input)}
	x.team, x.teamText = teamOf(x.root, a.cfg.Evaluator)
	if out, stop := x.newLedger(ctx, 0, "start", ""); stop {
		return out
	}
	for n := 1; ; n++ {
		if n > a.cfg.MaxRounds {
			return x.exit(ctx, n, exitMaxRounds, fmt.Sprintf("no satisfying answer within %d rounds", a.cfg.MaxRounds))
		}
		pl, out, stop := x.progress(ctx, n)
		if stop {
			return x.ended(out)
		}
		if pl.Satisfied {
			return x.exit(ctx, n, exitSatisfied, "")
		}
		if pl.Replan {
			if out, stop := x.replan(ctx, n); stop {
				return out
			}
			continue
		}
		res := r.delegate(ctx, x.root, "r"+strconv.Itoa(n), n, pl.NextHandoff, pl.Instruction)
		if out, stop := r.below(ctx, x.root, []callResult{res}, store.Update{Turn: n}); stop {
			return x.ended(out)
		}
		x.rounds = append(x.rounds, adaptiveRound{n: n, agent: pl.NextHandoff, instruction: pl.Instruction, output: res.output, isError: res.isError})
	}
}

// replan re-enters the outer loop in round n: a new task ledger, or, when
// the replans are used up, escalation (a plan review or a failure). An
// outcome that ends the run is final: an exit has quoted its best answer.
func (x *adaptiveRun) replan(ctx context.Context, n int) (outcome, bool) {
	if x.replans < x.cfg.MaxReplans {
		out, stop := x.newLedger(ctx, n, "stall", "")
		return x.ended(out), stop
	}
	detail := fmt.Sprintf("the run stalled %d times in a row after %d replans", x.stalls, x.replans)
	if x.cfg.OnExhausted == ExhaustedFail {
		return x.exit(ctx, n, exitMaxReplans, detail), true
	}
	if n >= x.cfg.MaxRounds {
		// A review would have no round left to act on its answer.
		return x.exit(ctx, n, exitMaxRounds, fmt.Sprintf("no satisfying answer within %d rounds (%s)", x.cfg.MaxRounds, detail)), true
	}
	x.reviews++
	pause := Event{Type: EventPaused, Key: "review/" + strconv.Itoa(x.reviews), Agent: x.root.name, Turn: n, Kind: "plan_review",
		Reason:  "adaptive " + exitMaxReplans + ": " + detail + "; review the plan (resume with feedback, or with {\"plan\": [...]} to replace it)",
		Context: x.ledger.text()}
	msg, ok, err := x.r.await(ctx, x.root, pause, store.Update{Turn: n})
	switch {
	case err != nil:
		return outcome{kind: interrupted, err: err}, true
	case !ok:
		return outcome{kind: paused}, true
	}
	out, stop := x.newLedger(ctx, n, "review", msg)
	return x.ended(out), stop
}

// newLedger makes and records the task ledger of round n (0: the start)
// for cause, taking in a plan review's feedback. It adopts what the
// journal holds, so a replay continues with the recorded facts and plan.
func (x *adaptiveRun) newLedger(ctx context.Context, n int, cause, feedback string) (outcome, bool) {
	number := x.ledger.Number + 1
	if cause == "start" {
		number = 0
	}
	key := "p" + strconv.Itoa(number)
	next := TaskLedger{Facts: x.ledger.Facts, Plan: x.ledger.Plan, Number: number, Cause: cause, Feedback: feedback}
	if _, done := x.r.recorded[key+"/ledger"]; !done {
		if edited, ok := editedPlan(feedback); ok {
			next.Plan = edited.Plan
			if edited.Facts != nil {
				next.Facts = *edited.Facts
			}
		} else {
			parsed, out, stop := x.ask(ctx, x.asker(ledgerSchema), key, n, x.ledgerPrompt(cause, feedback), func(text string) error {
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
			if stop {
				return out, true
			}
			if !parsed {
				next.Fallback = true
				if len(next.Plan) == 0 {
					next.Plan = []string{"Work on the task with " + strings.Join(x.team, ", ") + ", one at a time."}
				}
			}
		}
		next.Changes = planChanges(x.ledger.Plan, next.Plan)
	}
	ev, err := x.r.record(ctx, Event{Type: EventLedger, Key: key + "/ledger", Agent: x.root.name, Turn: n, Ledger: &next}, store.Update{Turn: n})
	if err != nil {
		return outcome{kind: interrupted, err: err}, true
	}
	if ev.Ledger == nil {
		return outcome{kind: interrupted, err: &storeError{fmt.Errorf("run %s: ledger record %s has no ledger", x.r.id, ev.Key)}}, true
	}
	x.ledger = *ev.Ledger
	switch x.ledger.Cause {
	case "stall":
		x.replans++
	case "review":
		x.replans = 0
	}
	x.stalls = 0
	return outcome{}, false
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
func (x *adaptiveRun) progress(ctx context.Context, n int) (ProgressLedger, outcome, bool) {
	r := x.r
	tkey := "r" + strconv.Itoa(n)
	pl := ProgressLedger{Round: n}
	if _, done := r.recorded[tkey+"/progress"]; !done {
		var judged, picked bool
		var out outcome
		var stop bool
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
		if e := x.cfg.Evaluator; e != "" {
			pl.Evaluator = e
			judge := x.as(r.plan.agents[e], judgeSchema)
			judged, out, stop = x.ask(ctx, judge, tkey+"/judge", n, x.judgePrompt(), func(text string) error { return check(text, true, false) })
		} else {
			judged, out, stop = x.ask(ctx, x.asker(progressSchema), tkey+"/ledger", n, x.progressPrompt(), func(text string) error { return check(text, true, true) })
			picked = judged
		}
		if stop {
			return pl, out, true
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
		pl.Replan = !pl.Satisfied && pl.Stalls >= x.cfg.StallThreshold
		if !pl.Satisfied && !pl.Replan && !picked {
			if x.cfg.Evaluator != "" {
				picked, out, stop = x.ask(ctx, x.asker(pickSchema), tkey+"/pick", n, x.pickPrompt(), func(text string) error { return check(text, false, true) })
				if stop {
					return pl, out, true
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
	}
	ev, err := r.record(ctx, Event{Type: EventProgress, Key: tkey + "/progress", Agent: x.root.name, Turn: n, Progress: &pl}, store.Update{Turn: n})
	if err != nil {
		return pl, outcome{kind: interrupted, err: err}, true
	}
	if ev.Progress == nil {
		return pl, outcome{kind: interrupted, err: &storeError{fmt.Errorf("run %s: progress record %s has no ledger", r.id, ev.Key)}}, true
	}
	pl = *ev.Progress
	x.stalls = pl.Stalls
	return pl, outcome{}, false
}

// signals returns the deterministic stall signals of round n-1 against the
// adaptiveWindow rounds before it (none when round n-1 ran no handoff: a
// round is judged once).
func (x *adaptiveRun) signals(n int) []string {
	if len(x.rounds) < 2 || x.rounds[len(x.rounds)-1].n != n-1 {
		return nil
	}
	last := x.rounds[len(x.rounds)-1]
	window := x.rounds[max(0, len(x.rounds)-1-adaptiveWindow) : len(x.rounds)-1]
	var out []string
	if slices.ContainsFunc(window, func(o adaptiveRound) bool { return o.agent == last.agent && o.instruction == last.instruction }) {
		out = append(out, "repeat")
	}
	if slices.ContainsFunc(window, func(o adaptiveRound) bool { return o.output == last.output }) {
		out = append(out, "no_new_info")
	}
	return out
}

// exit ends the run in round n for code: the final-answer step synthesizes the result
// from the rounds, which completes the run when the request is satisfied;
// otherwise the run fails with a reason that starts "adaptive <code>:"
// and quotes the best answer.
func (x *adaptiveRun) exit(ctx context.Context, n int, code, detail string) outcome {
	r := x.r
	schema := json.RawMessage(nil)
	if !r.info.textOut {
		schema = r.info.outSchema
	}
	var result json.RawMessage
	var text string
	parsed, out, stop := x.ask(ctx, x.asker(schema), "final", n, x.finalPrompt(code, detail), func(t string) error {
		res, err := r.info.textToResult(t)
		if err == nil {
			result, text = res, t
		}
		return err
	})
	if stop {
		return x.ended(out)
	}
	switch {
	case code == exitSatisfied && parsed:
		return outcome{kind: completed, result: result}
	case code == exitSatisfied:
		return outcome{kind: failed, reason: "adaptive " + code + ": the final answer is not a valid result after " + strconv.Itoa(adaptiveTries) + " tries"}
	}
	reason := "adaptive " + code + ": " + detail
	if parsed {
		reason += "; best answer: " + clip(text, 1000)
	}
	return outcome{kind: failed, reason: reason}
}

// ended adds the best answer so far to a failure that ends the run early
// (a budget): the final-answer step, made without calling a model.
func (x *adaptiveRun) ended(out outcome) outcome {
	if out.kind == failed && len(x.rounds) > 0 {
		last := x.rounds[len(x.rounds)-1]
		out.reason += "; best answer so far (" + last.agent + "): " + clip(last.output, 1000)
	}
	return out
}

// asker is the orchestrator without tools, answering with JSON that
// matches schema where the provider supports structured output.
func (x *adaptiveRun) asker(schema json.RawMessage) *agentPlan {
	return x.as(x.root, schema)
}

// as is agent ap without tools, answering with schema.
func (x *adaptiveRun) as(ap *agentPlan, schema json.RawMessage) *agentPlan {
	c := *ap
	c.root, c.toolDefs, c.schema, c.textOnly = false, nil, schema, true
	if ap == x.root {
		c.system = strings.TrimSpace(ap.system + "\n\n" + adaptiveSystem)
	}
	return &c
}

// ask asks ap for a reply that check accepts: up to adaptiveTries model
// calls in round n, under tkey, tkey+"/2" and so on, each retry told what
// was wrong with the reply before. ok is false when none was accepted; stop
// is set when the run cannot go on (an interruption, a budget, or a model
// that fails).
func (x *adaptiveRun) ask(ctx context.Context, ap *agentPlan, tkey string, n int, prompt string, check func(string) error) (ok bool, out outcome, stop bool) {
	msgs := []model.Message{{Role: model.RoleUser, Content: prompt}}
	for try := 1; try <= adaptiveTries; try++ {
		key := tkey
		if try > 1 {
			key += "/" + strconv.Itoa(try)
		}
		resp, err := x.r.modelStep(ctx, ap, key, n, msgs)
		if err != nil {
			if out, stop := stepFailed(ctx, err); stop {
				return false, out, true
			}
			return false, outcome{kind: failed, reason: "adaptive: " + err.Error()}, true
		}
		err = check(resp.Message.Content)
		if err == nil {
			return true, outcome{}, false
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: resp.Message.Content},
			model.Message{Role: model.RoleUser, Content: "That reply is not valid: " + err.Error() + ". Reply with only the JSON object."})
	}
	return false, outcome{}, false
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

// text is the ledger as prompts and plan reviews show it.
func (l TaskLedger) text() string {
	var b strings.Builder
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		b.WriteString(title + ":\n")
		for _, s := range items {
			b.WriteString("- " + s + "\n")
		}
	}
	list("Facts given", l.Facts.Given)
	list("Facts to look up", l.Facts.ToLookUp)
	list("Facts derived", l.Facts.Derived)
	b.WriteString("Plan:\n")
	for i, s := range l.Plan {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	return b.String()
}

// transcript is the rounds so far, as prompts show them.
func (x *adaptiveRun) transcript() string {
	if len(x.rounds) == 0 {
		return "No rounds yet.\n"
	}
	var b strings.Builder
	for _, o := range x.rounds {
		status := "answered"
		if o.isError {
			status = "failed"
		}
		fmt.Fprintf(&b, "Round %d: %s was asked: %s\n%s %s: %s\n\n", o.n, o.agent, o.instruction, o.agent, status, o.output)
	}
	return b.String()
}

func (x *adaptiveRun) context() string {
	return "Task:\n" + x.task + "\n\nTeam:\n" + x.teamText + "\n" + x.ledger.text() + "\nRounds so far:\n" + x.transcript()
}

func (x *adaptiveRun) ledgerPrompt(cause, feedback string) string {
	switch cause {
	case "start":
		return "Task:\n" + x.task + "\n\nTeam:\n" + x.teamText + "\nBefore starting, list the facts given in the task, the facts to look up, and the facts to derive; then make a short plan, as steps, for the team. " + ledgerReply
	case "review":
		return x.context() + "\nA human reviewed the plan and answered:\n" + feedback + "\n\nUpdate the facts and the plan accordingly. " + ledgerReply
	}
	return x.context() + "\nThe work is stalled: the last rounds made no progress or went in circles. Update the facts with what was learned, then make a new plan that avoids what did not work. " + ledgerReply
}

const ledgerReply = `Reply with only a JSON object: {"facts": {"given": [...], "to_look_up": [...], "derived": [...]}, "plan": ["step", ...]}.`

func (x *adaptiveRun) progressPrompt() string {
	return x.context() + "\nJudge the work so far and choose the next step. Reply with only a JSON object: " +
		`{"is_request_satisfied": bool, "is_in_loop": bool, "is_progress_being_made": bool, "next_handoff": "<one of: ` + strings.Join(x.team, ", ") +
		`>", "instruction": "<what that member should do next>", "reason": "<one sentence>"}.`
}

func (x *adaptiveRun) pickPrompt() string {
	return x.context() + "\nChoose the next step. Reply with only a JSON object: " +
		`{"next_handoff": "<one of: ` + strings.Join(x.team, ", ") + `>", "instruction": "<what that member should do next>"}.`
}

func (x *adaptiveRun) judgePrompt() string {
	return x.context() + "\nYou judge the team's progress. Reply with only a JSON object: " +
		`{"is_request_satisfied": bool, "is_in_loop": bool, "is_progress_being_made": bool, "reason": "<one sentence>"}.`
}

func (x *adaptiveRun) finalPrompt(code, detail string) string {
	p := x.context() + "\n"
	if code != exitSatisfied {
		p += "The work has to stop now (" + detail + "). "
	}
	p += "Give the final answer to the task, based on the rounds above."
	if !x.r.info.textOut {
		p += " Reply with only a JSON value matching this schema: " + string(x.r.info.outSchema)
	}
	return p
}

const adaptiveSystem = "You orchestrate a team: you keep a ledger of facts and a plan, judge progress after each round, and direct one team member per round with a precise instruction."

// The structured-output schemas of the adaptive prompts.
var (
	ledgerSchema   = json.RawMessage(`{"type":"object","properties":{"facts":{"type":"object","properties":{"given":{"type":"array","items":{"type":"string"}},"to_look_up":{"type":"array","items":{"type":"string"}},"derived":{"type":"array","items":{"type":"string"}}}},"plan":{"type":"array","items":{"type":"string"}}},"required":["facts","plan"]}`)
	judgeSchema    = json.RawMessage(`{"type":"object","properties":{"is_request_satisfied":{"type":"boolean"},"is_in_loop":{"type":"boolean"},"is_progress_being_made":{"type":"boolean"},"reason":{"type":"string"}},"required":["is_request_satisfied","is_in_loop","is_progress_being_made"]}`)
	pickSchema     = json.RawMessage(`{"type":"object","properties":{"next_handoff":{"type":"string"},"instruction":{"type":"string"}},"required":["next_handoff","instruction"]}`)
	progressSchema = json.RawMessage(`{"type":"object","properties":{"is_request_satisfied":{"type":"boolean"},"is_in_loop":{"type":"boolean"},"is_progress_being_made":{"type":"boolean"},"next_handoff":{"type":"string"},"instruction":{"type":"string"},"reason":{"type":"string"}},"required":["is_request_satisfied","is_in_loop","is_progress_being_made","next_handoff","instruction"]}`)
)
