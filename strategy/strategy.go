package strategy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/swarmrt/swarm/internal/seam"
)

// Strategy is a kind of run: what a run does, written as straight-line Go
// over the durable primitives of a [Driver]. Give a swarm one with
// swarm.Spec{Strategy: Of(s)}; its runs are then driven by Drive instead
// of the model's tool-calling loop.
//
// Drive returns the run's result as JSON (a JSON string for a swarm whose
// result is text), which the runtime checks against the swarm's result
// type and journals as the run's end. Its error decides the run's end
// otherwise:
//
//   - an error wrapping [ErrAwaiting] (from Await, or a delegation whose
//     child waits for a human): the run pauses and is released; Drive runs
//     again when the answer arrives. A result returned while a step's
//     ErrAwaiting is pending (dropped, not returned) fails the run, unless
//     the strategy cancelled the context the step was given, which
//     withdraws its question;
//   - a [*Failure]: the run fails with its reason;
//   - the context's error or a failure of the journal (see
//     [Interrupted]): the run is interrupted and continues on a later
//     drive, here or on another process;
//   - any other error: the run fails with the error's text.
//
// Drive follows the rules of replay in the package documentation.
type Strategy interface {
	Drive(ctx context.Context, d *Driver) (json.RawMessage, error)
}

// Checker is an optional interface of a [Strategy]: a strategy that needs
// a swarm of a certain shape (say, with handoffs to delegate to) checks it
// before a run starts. Check is called whenever a run's plan is made (when
// the run starts, and again when it is driven after a restart), before
// anything is journaled, with a Driver that describes the run (Agent,
// Input, Roster, ToolNames, ResultSchema) but runs no steps. An error
// refuses the run: Start returns it, wrapping swarm.ErrInvalid.
//
// maxTurns, when positive, replaces Spec.MaxTurns as the bound of turns
// the run's status shows, for a strategy that counts its own rounds (see
// [Driver.AtTurn]).
type Checker interface {
	Check(d *Driver) (maxTurns int, err error)
}

// SnapshotKind is an optional interface of a [Strategy] that names its
// checkpoints: a checkpoint of another kind (the definition's strategy
// changed) is ignored, and the journal replayed from its start. Without
// it the kind is the strategy's Go type.
type SnapshotKind interface {
	SnapshotKind() string
}

// CheckpointEvery is an optional interface of a [Strategy] whose runs are
// driven again and again, each drive replaying the journal from the
// newest checkpoint: a conversation is driven once per user message, so
// with a checkpoint only every Config.SnapshotEvery records each message
// would replay all those since the last one, and a long conversation's
// messages would cost more and more until it. Checkpoint is then due once
// CheckpointEvery() records (at least one) were added since the newest
// snapshot. Config.SnapshotEvery still bounds it from above, and a
// negative one still means no snapshots.
type CheckpointEvery interface {
	CheckpointEvery() int
}

// LongLived is an optional interface of a [Strategy] whose runs live on
// between pieces of work that come from outside their run tree: a
// conversation answers one user message after another, a team's members
// handle the user's messages, mail and tasks. A new run tree whose root's
// strategy is long-lived gets call limits per piece of outside work
// instead of for its whole life, and pauses when it reaches one (see
// swarm.Budget.PerWork); a piece of work starts at each user message the
// run awaited (Await with reason swarm.AwaitingMessage) and at each model
// step marked [Step.Outside].
type LongLived interface {
	LongLived() bool
}

// Of makes s the strategy of a swarm: set swarm.Spec.Strategy to it. A
// nil s gives nil (no strategy: the tool-calling loop). A strategy set
// without Of does not compile: the compiler says its type is "missing
// method WrapWithStrategyOf".
func Of(s Strategy) seam.Strategy {
	if s == nil {
		return nil
	}
	return engineStrategy{s}
}

// engineStrategy is a Strategy as the engine drives it.
type engineStrategy struct{ s Strategy }

// WrapWithStrategyOf implements seam.Strategy.
func (e engineStrategy) WrapWithStrategyOf() seam.Driven { return e }

// Drive implements seam.Driven: the engine recognizes the strategy's
// failures by their Ends method (seam.FailureOf).
func (e engineStrategy) Drive(ctx context.Context, d any) (json.RawMessage, error) {
	return e.s.Drive(ctx, newDriver(d))
}

// Check implements seam.Driven.
func (e engineStrategy) Check(d any) (int, error) {
	c, ok := e.s.(Checker)
	if !ok {
		return 0, nil
	}
	return c.Check(newDriver(d))
}

// SnapshotKind implements seam.Driven.
func (e engineStrategy) SnapshotKind() string {
	if k, ok := e.s.(SnapshotKind); ok {
		return k.SnapshotKind()
	}
	return fmt.Sprintf("%T", e.s)
}

// CheckpointEvery implements seam.Driven.
func (e engineStrategy) CheckpointEvery() int {
	if c, ok := e.s.(CheckpointEvery); ok {
		return max(c.CheckpointEvery(), 1)
	}
	return 0
}

// LongLived implements seam.Strategy.
func (e engineStrategy) LongLived() bool {
	l, ok := e.s.(LongLived)
	return ok && l.LongLived()
}

// ErrAwaiting is wrapped by the error of a primitive whose answer is not
// in the journal yet (a human's, or a child run's that waits for one): the
// run pauses when Drive returns it. A strategy passes it up, or, in a
// branch of Parallel, lets the other branches go on.
var ErrAwaiting = seam.ErrAwaiting

// Failure is an error that fails the run with Reason when Drive returns
// it. Delegations that fail return one too, so that a strategy can tell a
// failed step (which it may handle) from an interruption (which it must
// return).
type Failure struct {
	Reason string
	// ends: the failure ends the whole run even if the strategy goes on
	// (a limit or budget of the run tree was reached).
	ends bool
}

func (f *Failure) Error() string { return f.Reason }

// Ends reports whether the failure ends the run whatever the strategy
// does: a limit or budget of the run tree was reached, or a guardrail
// tripped. A strategy returns such a failure instead of handling it as a
// failed step.
func (f *Failure) Ends() bool { return f.ends }

func init() {
	seam.NewFailure = func(reason string, ends bool) error { return &Failure{Reason: reason, ends: ends} }
}

// Interrupted marks err, a failure of something the strategy reads or
// writes outside the journal (a store it calls itself), as an
// interruption: Drive returning it (or an error wrapping it) releases the
// run to continue on a later drive, instead of failing it.
func Interrupted(err error) error { return seam.Interrupt(err) }

// IsInterrupted reports whether err is, or wraps, an interruption (see
// [Interrupted]): the engine's, when its journal or a store failed, or a
// strategy's own. A strategy that turns the errors of its parts into
// outcomes of its own (a case's error, a branch's failure) passes an
// interruption on instead, so that the run continues on a later drive.
func IsInterrupted(err error) bool { return seam.IsInterrupted(err) }
