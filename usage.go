package swarm

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// maxUsageDepth bounds the walk down a run tree for its usage.
const maxUsageDepth = 64

// UsageByAgent returns the token usage and cost of run id's tree per agent
// (and swarm orchestrator): what run id and every run below it spent
// themselves, read from their journals. The runs below are all the runs
// whose parent is in the tree, in any state: the child runs of swarm
// handoffs, finished or not, and a team's teammates. A child's agents are
// reported under their own names, so an agent used in several places of
// the tree is summed. The steps a fork reused from its origin are not
// counted: the origin spent them.
func (rt *Runtime) UsageByAgent(ctx context.Context, id string) (map[string]model.Usage, error) {
	out := map[string]model.Usage{}
	if err := rt.usageInto(ctx, id, out, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// TreeUsage returns the token usage and cost of run id's tree: the sum of
// [Runtime.UsageByAgent]. It is the usage the dashboard and swarm status
// show for a run. Status.Usage, the run's row, differs from it: it holds
// the run's own usage and that of the child runs whose outcome the run
// recorded, not the children still going nor a team's teammates.
func (rt *Runtime) TreeUsage(ctx context.Context, id string) (model.Usage, error) {
	by, err := rt.UsageByAgent(ctx, id)
	if err != nil {
		return model.Usage{}, err
	}
	var total model.Usage
	for _, u := range by {
		total = total.Add(u)
	}
	return total, nil
}

func (rt *Runtime) usageInto(ctx context.Context, id string, out map[string]model.Usage, depth int) error {
	if depth > maxUsageDepth {
		return fmt.Errorf("usage of %s: run tree deeper than %d", id, maxUsageDepth)
	}
	recs, err := rt.store.Read(ctx, id, 0, 0)
	if err != nil {
		return fmt.Errorf("usage of %s: %w", id, err)
	}
	reused := 0
	for i, rec := range recs {
		switch EventType(rec.Type) {
		case EventStarted, EventModelResponse, EventCompacted:
		default:
			continue
		}
		if i <= reused && i > 0 {
			continue // a fork's copy of its origin's step
		}
		ev, err := decodeEvent(rec)
		if err != nil {
			return fmt.Errorf("usage of %s: %w", id, err)
		}
		switch {
		case ev.Type == EventStarted:
			reused = ev.Reused
		case ev.Usage != nil:
			out[ev.Agent] = out[ev.Agent].Add(*ev.Usage)
		}
	}
	kids, err := rt.store.List(ctx, store.Filter{Parent: id})
	if err != nil {
		return fmt.Errorf("usage of %s: %w", id, err)
	}
	for _, k := range kids {
		if err := rt.usageInto(ctx, k.ID, out, depth+1); err != nil {
			return err
		}
	}
	return nil
}
