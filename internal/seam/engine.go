package seam

import (
	"context"
	"encoding/json"
)

// Engine is a durable engine other than the runtime's own (package
// temporal's), set in swarm.Config.Engine. It runs the runs of the swarms
// it names and mirrors every record they produce into the runtime's store
// (each run's row and its journal, in the engine's event shapes), so that
// Status, Wait, Events and every other reader of the store see its runs
// as they see the runtime's own; Start, Resume, Stop and a conversation's
// messages go to it instead. The runtime never drives (claims, recovers,
// resumes here) a run of a tree whose root run's swarm the engine runs.
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
