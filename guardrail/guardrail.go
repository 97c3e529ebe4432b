// Package guardrail defines guardrails: checks of a run's steps that let a
// step proceed, reject it, pause the run for a human or fail it at once.
//
// A [Guardrail] is a Go function (or a command defined in swarm.yaml) that
// looks at one step of a run, a [Check], at the [Point]s it names: the
// run's input, each model response, a tool call or handoff before it
// starts, and its result before the model sees it. It answers with a
// [Verdict]. Guardrails are given to a swarm (swarm.Spec.Guardrails, which
// guard every agent of the run) or to one agent (swarm.Agent.Guardrails);
// the engine (package swarm) applies them and journals each verdict before
// the step it decides proceeds, so a recovered run never checks a recorded
// step again.
//
// This package holds only the types a guardrail is written with; it
// depends on nothing but the standard library and package model. The
// string values of points and actions are journaled: they never change.
package guardrail

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/swarmrt/swarm/model"
)

// Point names where in a run a guardrail checks.
type Point string

// The points a guardrail can check.
const (
	// Input checks the run's input before the first model call and, in a
	// conversation or a team's lead, each user message before it is
	// answered (a rejected message gets a failed turn as its answer).
	Input Point = "input"
	// Output checks each model response of the agents it guards (text and
	// tool calls), the final output included, before the response is
	// acted on.
	Output Point = "output"
	// ToolCall checks a tool call before the tool runs.
	ToolCall Point = "tool_call"
	// ToolResult checks a tool's result before the model sees it.
	ToolResult Point = "tool_result"
	// Handoff checks a handoff (to an agent or a swarm) before it starts.
	Handoff Point = "handoff"
	// HandoffResult checks what an agent or a swarm handed off to returns
	// before the delegating model sees it.
	HandoffResult Point = "handoff_result"
)

// Valid reports whether p is one of the points above.
func (p Point) Valid() bool {
	switch p {
	case Input, Output, ToolCall, ToolResult, Handoff, HandoffResult:
		return true
	}
	return false
}

// Action is what a guardrail decides.
type Action string

// The actions of a [Verdict].
const (
	// Allow lets the step proceed.
	Allow Action = "allow"
	// Reject refuses the step but lets the run go on: a rejected model
	// response is answered with the verdict's message and the model gets
	// another attempt (at most [MaxRetries] in a row); a rejected tool
	// call or handoff gets the message as its error result; a rejected
	// result is replaced by the message as an error result. A rejected
	// input fails the run (there is no model turn to give); a rejected
	// user message of a conversation or a team's lead is answered with a
	// failed turn whose reason is the rejection.
	Reject Action = "reject"
	// Tripwire fails the run at once with the reason
	// "guardrail <name>: <message>".
	Tripwire Action = "tripwire"
	// Pause pauses the run for a human, with the reason
	// "guardrail <name>: <message>". Resuming it approves the step, which
	// then proceeds as if allowed.
	Pause Action = "pause"
)

// MaxRetries is how many rejected responses in a row one model step may
// have before the run fails with the last rejection's reason.
const MaxRetries = 3

// Verdict is a guardrail's decision. An empty Action counts as Allow; an
// action other than those above trips the run.
type Verdict struct {
	Action Action `json:"verdict"`
	// Message explains a verdict other than Allow (to the model for
	// Reject, in the run's reason otherwise).
	Message string `json:"message,omitempty"`
}

// Check is what a guardrail looks at: one step of a run. The fields used
// depend on Point.
type Check struct {
	Point Point  `json:"point"`
	RunID string `json:"run_id"`
	// Agent is the agent whose step is checked (the swarm's id for its
	// orchestrator).
	Agent string `json:"agent"`
	// Text is the input (Input, as text), the response's text (Output),
	// the tool's or handoff's output (the result points) or the handoff's
	// request (Handoff).
	Text string `json:"text,omitempty"`
	// ToolCalls are the response's tool calls (Output).
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

	// Parts are the images, files and audio of the input (Input, the
	// run's input) or of a tool's result (ToolResult); a part kept as a
	// blob has its hash and size but not its bytes. A guardrail can
	// reject a step for its parts' types, sizes or names.
	Parts []model.Part `json:"parts,omitempty"`
}

// Guardrail is a check of a run's steps: a Go function, or a command
// defined in swarm.yaml. Guardrails of a swarm guard every agent of the
// run; guardrails of an agent guard that agent only (after the swarm's).
//
// Each verdict is journaled as a guardrail event before the step it
// decides proceeds, so a recovered run never checks a recorded step again.
// A check that returns an error or panics trips the run (it fails closed).
type Guardrail struct {
	// Name identifies the guardrail in events, reasons, spans and journal
	// keys: letters, digits, '_' and '-', at most 64 characters.
	Name string
	// Points are where it checks (see [Point]).
	Points []Point
	// Check decides on one step. It must be safe for concurrent use
	// (the tool calls of one response are checked in parallel).
	Check func(ctx context.Context, c Check) (Verdict, error)
}

// Validate reports what is wrong with g's definition: a bad name, no
// Check function, no point or an unknown one. A swarm with an invalid
// guardrail is refused when it starts.
func (g *Guardrail) Validate() error {
	if err := model.CheckName(g.Name); err != nil {
		return fmt.Errorf("guardrail: %w", err)
	}
	switch {
	case g.Check == nil:
		return fmt.Errorf("guardrail %s has no Check function", g.Name)
	case len(g.Points) == 0:
		return fmt.Errorf("guardrail %s checks no point", g.Name)
	}
	for _, p := range g.Points {
		if !p.Valid() {
			return fmt.Errorf("guardrail %s: unknown point %q", g.Name, p)
		}
	}
	return nil
}

// Decide runs g's Check on c and returns its verdict, failing closed: an
// error or a panic of Check, or an action other than those above, is a
// Tripwire whose message says what went wrong; an empty action is Allow.
// The engine decides every step with it.
func (g *Guardrail) Decide(ctx context.Context, c Check) (v Verdict) {
	defer func() {
		if p := recover(); p != nil {
			v = Verdict{Action: Tripwire, Message: fmt.Sprintf("check panicked: %v\n%s", p, debug.Stack())}
		}
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
