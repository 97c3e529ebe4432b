package swarm

import "fmt"

// LoopStrategy names how a run proceeds (see [Loop]).
type LoopStrategy string

// The loop strategies.
const (
	// LoopSimple is the orchestrator's tool-calling loop: the model calls
	// tools and hands off until it completes, fails or pauses the run.
	LoopSimple LoopStrategy = "simple"
	// LoopAdaptive is MagenticOne's orchestrator made durable: a task
	// ledger (facts and a plan), then rounds in which a progress ledger
	// picks the next agent and its instruction, a stall counter, replans
	// when the run stalls, and escalation when replans run out.
	LoopAdaptive LoopStrategy = "adaptive"
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
)

// Loop is a swarm's loop strategy (Spec.Loop). A nil Loop is the simple
// loop. Build an adaptive one with [Adaptive]:
//
//	Loop: swarm.Adaptive().WithEvaluator("critic").WithStallThreshold(3).WithMaxReplans(2)
//
// An adaptive orchestrator only plans and delegates: a swarm with an
// adaptive loop may not give its orchestrator tools or registry access
// (give them to a team member), and its swarm handoffs must take text
// input (they receive the ledger's instructions).
type Loop struct {
	// Strategy is LoopSimple (also when empty) or LoopAdaptive.
	Strategy LoopStrategy `json:"strategy,omitempty"`
	// Evaluator names one of the swarm's agent handoffs that judges each
	// round's progress instead of the orchestrator (adaptive). The
	// orchestrator does not hand work to it.
	Evaluator string `json:"evaluator,omitempty"`
	// StallThreshold is the stall count that triggers a replan
	// (DefaultStallThreshold when zero).
	StallThreshold int `json:"stall_threshold,omitempty"`
	// MaxReplans bounds the replans before the run escalates
	// (DefaultMaxReplans when zero; -1 for none).
	MaxReplans int `json:"max_replans,omitempty"`
	// MaxRounds bounds the rounds of the whole run, replans included
	// (DefaultMaxRounds when zero; the swarm's MaxTurns does not apply).
	MaxRounds int `json:"max_rounds,omitempty"`
	// OnExhausted is what happens when the replans are used up
	// (ExhaustedPause when empty).
	OnExhausted Exhausted `json:"on_exhausted,omitempty"`
}

// Adaptive returns an adaptive loop with the default settings.
func Adaptive() *Loop { return &Loop{Strategy: LoopAdaptive} }

// WithEvaluator returns l with agent judging progress (see Loop.Evaluator).
func (l *Loop) WithEvaluator(agent string) *Loop { c := *l; c.Evaluator = agent; return &c }

// WithStallThreshold returns l with the stall count that triggers a replan.
func (l *Loop) WithStallThreshold(n int) *Loop { c := *l; c.StallThreshold = n; return &c }

// WithMaxReplans returns l with the replans allowed before escalation.
func (l *Loop) WithMaxReplans(n int) *Loop { c := *l; c.MaxReplans = n; return &c }

// WithMaxRounds returns l with the rounds allowed over the whole run.
func (l *Loop) WithMaxRounds(n int) *Loop { c := *l; c.MaxRounds = n; return &c }

// OnExhaustedDo returns l with what happens when the replans are used up.
func (l *Loop) OnExhaustedDo(e Exhausted) *Loop { c := *l; c.OnExhausted = e; return &c }

// check reports a setting out of range.
func (l *Loop) check() error {
	switch {
	case l.StallThreshold < 0:
		return fmt.Errorf("%w: loop: stall_threshold %d is negative", ErrInvalid, l.StallThreshold)
	case l.MaxReplans < -1:
		return fmt.Errorf("%w: loop: max_replans %d is below -1", ErrInvalid, l.MaxReplans)
	case l.MaxRounds < 0:
		return fmt.Errorf("%w: loop: max_rounds %d is negative", ErrInvalid, l.MaxRounds)
	}
	switch l.OnExhausted {
	case "", ExhaustedPause, ExhaustedFail:
	default:
		return fmt.Errorf("%w: loop: on_exhausted %q (want %s or %s)", ErrInvalid, l.OnExhausted, ExhaustedPause, ExhaustedFail)
	}
	return nil
}
