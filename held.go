package swarm

import (
	"context"

	"github.com/swarmrt/swarm/store"
)

// heldKey is the context key of the *heldAnswer of the agent a handoff
// runs.
type heldKey struct{}

// heldAnswer holds an agent's final model response (an answer, with no
// tool calls) until the handoff that ran the agent journals its return:
// both go in one append. An answer has no side effects, so a crash before
// that append only repeats the model call, as for the orchestrator's final
// response (see runner.final), and each handoff costs one journal write
// less.
type heldAnswer struct {
	evs []Event
}

// appendHeld journals evs, preceded by the held answer if there is one.
// Hooks see no model responses, so the held one fires none. The row's
// usage total is written under r.mu, like recordResponse's, so
// that totals never go backwards when calls run in parallel.
func (r *runner) appendHeld(ctx context.Context, h *heldAnswer, evs []Event, u store.Update, ap *agentPlan) error {
	if len(h.evs) == 0 {
		return r.append(ctx, evs, u, ap)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	total := r.usage
	u.Usage = &total
	return r.append(ctx, append(h.evs, evs...), u, ap)
}
