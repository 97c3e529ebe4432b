// Package seam is the bridge between the engine (package swarm) and the
// public strategy seam (package strategy), which sits above it: a strategy
// names the API's types (Event, Agent, Runtime), so package strategy
// imports package swarm, and the engine reaches a strategy only through
// what is declared here.
//
// It holds the values both sides share: the sentinel and error types the
// engine returns and recognizes, the plain structs the primitives take and
// return (package strategy declares public structs of the same shape and
// converts), the context keys of a round's tool calls, and the few
// functions of the engine package strategy calls outside a run (set by
// package swarm when it is initialized).
package seam

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model"
)

// ErrAwaiting is wrapped by the error of a primitive whose answer is not
// in the journal yet (see strategy.ErrAwaiting).
var ErrAwaiting = errors.New("awaiting an answer")

// Strategy is what swarm.Spec.Strategy holds: a strategy of package
// strategy as strategy.Of wraps it, the only maker of one. Its one method
// is named after the fix for leaving strategy.Of out: a compiler that
// refuses a strategy given as is says it is "missing method
// WrapWithStrategyOf", where the engine's own methods would have sent the
// reader to add a Check method with the wrong signature. Nothing outside
// the module can implement it: its result is of this internal package.
type Strategy interface {
	// WrapWithStrategyOf returns the strategy as the engine drives it.
	WrapWithStrategyOf() Driven
}

// Driven is a strategy as the engine drives it. d is the engine's driver
// of the run, which implements the primitives package strategy forwards
// to.
type Driven interface {
	// Drive drives the run (see strategy.Strategy).
	Drive(ctx context.Context, d any) (json.RawMessage, error)
	// Check checks a run before it starts with a driver that runs no
	// steps (see strategy.Checker); 0 and nil when the strategy does not
	// check.
	Check(d any) (maxTurns int, err error)
	// SnapshotKind names the strategy's checkpoints (see
	// strategy.SnapshotKind).
	SnapshotKind() string
	// CheckpointEvery is how many records (at least 1) may pass between
	// checkpoints (see strategy.CheckpointEvery); 0 for the runtime's
	// setting.
	CheckpointEvery() int
	// LongLived reports whether the strategy's runs take up work from
	// outside their tree again and again (see strategy.LongLived).
	LongLived() bool
}

// NewFailure makes a failed step as the engine returns it to a strategy:
// package strategy sets it, when it is initialized, to make a
// *strategy.Failure, so that a primitive's error needs no conversion (an
// engine's failure reaches a strategy only through package strategy, which
// is initialized before any strategy exists).
var NewFailure = func(reason string, final bool) error { return &Failure{Reason: reason, Final: final} }

// Failure is a failed step or run, the engine's own (see NewFailure).
type Failure struct {
	// Reason says why.
	Reason string
	// Final: the failure ends the whole run whatever the strategy does.
	Final bool
}

func (f *Failure) Error() string { return f.Reason }

// Ends reports whether the failure ends the whole run.
func (f *Failure) Ends() bool { return f.Final }

// FailureOf finds in err's chain a failure, the engine's or a strategy's
// (any error with an Ends method, as strategy.Failure has), and returns
// its reason and whether it ends the run.
func FailureOf(err error) (reason string, final, ok bool) {
	var f interface {
		error
		Ends() bool
	}
	if err == nil || !errors.As(err, &f) {
		return "", false, false
	}
	return f.Error(), f.Ends(), true
}

// Interrupted marks an error as an interruption of the run (a failure of
// the journal or of a store a strategy reads), which releases the run to
// continue on a later drive instead of failing it.
type Interrupted struct{ Err error }

func (e *Interrupted) Error() string { return "journal: " + e.Err.Error() }

// Unwrap returns the interruption's cause.
func (e *Interrupted) Unwrap() error { return e.Err }

// Interrupt marks err as an interruption, unless it is one already (or
// nil).
func Interrupt(err error) error {
	if err == nil || IsInterrupted(err) {
		return err
	}
	return &Interrupted{Err: err}
}

// IsInterrupted reports whether err is, or wraps, an interruption.
func IsInterrupted(err error) bool {
	var i *Interrupted
	return errors.As(err, &i)
}

// Question is what a run asks a human (see strategy.Question).
type Question struct {
	Reason  string
	Context string
	Kind    string
}

// ToolResult is the outcome of one tool call (see strategy.ToolResult).
type ToolResult struct {
	Output  string
	IsError bool
	Parts   []model.Part
}

// Child is a child run to start (see strategy.Child).
type Child struct {
	ID     string
	Input  json.RawMessage
	Values map[string]any
	Parts  []model.Part
	Swarm  string
}

// Target is an agent or swarm a run may delegate to (see
// strategy.Target).
type Target struct {
	Name        string
	Description string
	Swarm       bool
	TextInput   bool
}

// AskOptions say how a model is asked (see strategy.AskOptions).
type AskOptions struct {
	Agent  string
	System string
	Schema json.RawMessage
}

// AgentRun is the plan of one run of an agent-run definition (see
// strategy.AgentRun). Agent is a *swarm.Agent: this package sits below
// package swarm.
type AgentRun struct {
	Agent      any
	Data       map[string]any
	MaxTurns   int
	Guardrails []guardrail.Guardrail
	Compaction *compact.Config
	Strategy   Strategy
}

// The engine's functions package strategy calls outside a run, set by
// package swarm when it is initialized.
var (
	// DefineAgentRuns makes a swarm.Definition whose runs are agent runs
	// planned by plan (see strategy.DefineAgentRuns).
	DefineAgentRuns func(id, description string, plan func(input json.RawMessage, values map[string]any) (AgentRun, error), err error) any
	// CheckAgentRun reports what would make a run planned as ar fail.
	CheckAgentRun func(ar AgentRun) error
)

// CallKey is the context key under which the engine keeps what a tool
// learns of the call it executes (a value with the methods of Call).
type CallKey struct{}

// Call is what package strategy needs of a tool call's context: events
// and a mailbox acknowledgement to journal with the call's result (evs
// is a []swarm.Event).
type Call interface {
	JournalWith(ackMail int64, evs any)
}

// HandKey is the context key of the parts the handoffs and tools of a
// round see as those of the calling agent's conversation (a Handing).
type HandKey struct{}

// Handing holds the parts set under HandKey.
type Handing struct{ Parts []model.Part }

// StampKey is the context key of a round's function that stamps each tool
// result event before it is journaled (a func(*swarm.Event) func()).
type StampKey struct{}

// ConvParts returns the parts of msgs, each blob and each URL once, in
// order.
func ConvParts(msgs []model.Message) []model.Part {
	var out []model.Part
	seen := map[string]bool{}
	for i := range msgs {
		for _, p := range msgs[i].Parts {
			id := ""
			switch {
			case p.Blob != "":
				id = "blob:" + p.Blob
			case p.URL != "":
				id = "url:" + p.URL
			}
			if id != "" {
				if seen[id] {
					continue
				}
				seen[id] = true
			}
			out = append(out, p)
		}
	}
	return out
}
