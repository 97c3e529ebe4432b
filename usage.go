package swarm

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm/model"
)

// UsageByAgent returns the token usage and cost of run id per agent (and
// swarm orchestrator), including every child run below it, read from the
// journals. A child's agents are reported under their own names, so an
// agent used in several places of the tree is summed.
func (rt *Runtime) UsageByAgent(ctx context.Context, id string) (map[string]model.Usage, error) {
	out := map[string]model.Usage{}
	if err := rt.usageInto(ctx, id, out, 0); err != nil {
		return nil, err
	}
	return out, nil
}

func (rt *Runtime) usageInto(ctx context.Context, id string, out map[string]model.Usage, depth int) error {
	if depth > 64 {
		return fmt.Errorf("usage of %s: run tree deeper than 64", id)
	}
	recs, err := rt.store.Read(ctx, id, 0, 0)
	if err != nil {
		return fmt.Errorf("usage of %s: %w", id, err)
	}
	for _, rec := range recs {
		switch EventType(rec.Type) {
		case EventModelResponse, EventHandoffReturned:
		default:
			continue
		}
		ev, err := decodeEvent(rec)
		if err != nil {
			return err
		}
		switch {
		case ev.Type == EventModelResponse && ev.Usage != nil:
			out[ev.Agent] = out[ev.Agent].Add(*ev.Usage)
		case ev.Type == EventHandoffReturned && ev.Child != "" && ev.Usage != nil:
			if err := rt.usageInto(ctx, ev.Child, out, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
