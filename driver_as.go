package swarm

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// The agent primitives of a Driver: steps taken as one of several agents
// (a conversation's active agent, a router's specialist), and the state a
// strategy journals with the tool results of its rounds.

// As implements strategy.Driver.As.
func (d *seamDriver) As(a *Agent, tools, hiddenTools []Tool, data map[string]any, maxTurns int, gs []guardrail.Guardrail, c *compact.Config) (any, error) {
	if d.checking {
		return nil, fmt.Errorf("%w: a strategy's Check runs no steps", ErrInvalid)
	}
	if a == nil {
		return nil, fmt.Errorf("%w: As needs an agent", ErrInvalid)
	}
	r := d.r
	r.plan.agents = map[string]*agentPlan{}
	r.plan.srcs = map[string]agentSrc{a.Name: {agent: a, place: "strategy of " + r.info.id}}
	ts := append(slices.Clip(a.Tools), tools...)
	ts = append(ts, hiddenTools...)
	values := make(map[string]any, len(r.values)+len(data))
	maps.Copy(values, r.values)
	maps.Copy(values, data)
	ap, err := r.rt.planAgent(r.plan, a.Name, false, a.Instructions, a.Model, ts, a.Handoffs, maxTurns, &a.Hooks, values, r.info)
	if err != nil {
		return nil, err
	}
	hidden := map[string]bool{}
	for _, t := range hiddenTools {
		hidden[t.Name()] = true
	}
	ap.toolDefs = slices.DeleteFunc(ap.toolDefs, func(d model.ToolDef) bool { return hidden[d.Name] })
	if ap, err = resolveAgentRun(ap, a, gs, c); err != nil {
		return nil, err
	}
	cp := *d
	cp.ap = ap
	return &cp, nil
}

// root is the agent the Driver's steps act as.
func (d *seamDriver) root() *agentPlan {
	if d.ap != nil {
		return d.ap
	}
	return d.r.plan.root
}

// asUpdate adds to u, for a Driver made by As, its agent as the run's
// active agent.
func (d *seamDriver) asUpdate(u store.Update) store.Update {
	if d.ap != nil {
		u.Agent = d.ap.name
	}
	return u
}

// stampResult calls the StampResults function of ctx, if any, on ev.
func stampResult(ctx context.Context, ev *Event) (journaled func()) {
	fn, ok := ctx.Value(seam.StampKey{}).(func(ev *Event) (journaled func()))
	if !ok {
		return func() {}
	}
	if done := fn(ev); done != nil {
		return done
	}
	return func() {}
}
