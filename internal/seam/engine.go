package seam

import (
	"context"
	"encoding/json"
	"time"

	"github.com/swarmrt/swarm/store"
)

// HeldLease is the lease of a run another engine drives (Remote.Create
// creates its row with it; the runtime drives such runs for an Engine):
// it does not run out, so that no worker of any runtime on the store ever
// claims the run.
//
// The rows of those runs never become store.Paused (a paused row is
// released, and a resume sent to it claimable by any worker): while such a
// run waits for an answer (Remote.Pause) its row stays store.Running,
// still held, with the question as its reason. HeldWaiting recognises that
// row, so that every reader of the store (Status, List, Resume, the HTTP
// API, a runtime without the Engine) shows the run as paused. Both sides
// keep this contract: the runtime through HeldLease and HeldWaiting, an
// Engine by taking its steps through Remote.
const HeldLease = 100 * 365 * 24 * time.Hour

// heldAfter is how far ahead a lease must end to be HeldLease: far beyond
// any lease a worker takes, and well within HeldLease after a clock skew.
const heldAfter = HeldLease / 10

// HeldWaiting reports whether r is the row of a run another engine drives
// that waits at a pause (see HeldLease): running, held for good, with a
// reason.
func HeldWaiting(r store.Run) bool {
	return r.State == store.Running && r.Reason != "" && r.LeaseUntil.After(time.Now().Add(heldAfter))
}

// Engine is a durable engine other than the runtime's own (package
// temporal's), set in swarm.Config.Engine. It runs the runs of the swarms
// it names and mirrors every record they produce into the runtime's store
// (each run's row and its journal, in the engine's event shapes), so that
// Status, Wait, Events and every other reader of the store see its runs
// as they see the runtime's own; Start, Resume, Stop and a conversation's
// messages go to it instead. The runtime never drives (claims, recovers,
// resumes here) a run of a tree whose root run's swarm the engine runs.
// Its runs' rows follow the contract of HeldLease: held for good, and a
// run waiting for an answer is a running row with the question as its
// reason (HeldWaiting), which the runtime shows as paused.
type Engine interface {
	// Bind is called once by swarm.New with the runtime being made (a
	// *swarm.Runtime), before New returns it: the engine runs the
	// swarms, agents and tools registered there. An error fails New.
	Bind(rt any) error
	// Runs reports whether the engine runs the runs of swarm id.
	Runs(swarm string) bool
	// Start starts run id of swarm on input, which the runtime has
	// checked against the swarm's definition. The run's row appears in
	// the store when the engine mirrors its start, which may be after
	// Start returns: the runtime waits for it.
	Start(ctx context.Context, swarm, id string, input json.RawMessage) error
	// Resume answers the pause run id waits at with message. The runtime
	// has checked that the run is paused (and, when the caller named
	// one, at which pause).
	Resume(ctx context.Context, id, message string) error
	// Stop ends run id with state stopped and reason. The runtime has
	// checked that the run has not finished.
	Stop(ctx context.Context, id, reason string) error
}
