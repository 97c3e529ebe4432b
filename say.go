package swarm

import (
	"context"
	"fmt"
)

// Say sends a user message to run id, which awaits one (a conversation, a
// team's lead: any run paused at a pause whose key is "m<n>/await"), and
// returns the run's reply to it (the EventReply journaled under
// "m<n>/reply", Text its answer) once the run has settled: durable once
// sent, continued by another process if this one dies. A run that pauses
// for something else instead (a human's answer) returns a nil reply and
// its status. Streamed text goes to WithStream's function.
func (rt *Runtime) Say(ctx context.Context, id, message string, opts ...SayOption) (*Event, Status, error) {
	_, ev, st, err := rt.say(ctx, "run", id, message, opts)
	return ev, st, err
}

// Settle waits until run id is not running (paused, or ended) and returns
// its status, driving it here when its owner is gone.
func (rt *Runtime) Settle(ctx context.Context, id string) (Status, error) {
	st, err := rt.settle(ctx, id, nil, nil)
	if err != nil {
		return st, fmt.Errorf("settle %s: %w", id, err)
	}
	return st, nil
}
