package swarm

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// The agent primitives of a Driver: steps taken as one of several agents
// (a conversation's active agent, a router's specialist), and the state a
// strategy journals with the tool results of its rounds.

// Acting says how [Driver.As] plans an agent.
type Acting struct {
	// Tools are offered to the agent besides its own.
	Tools []Tool
	// Hidden are tools the agent may call but is not offered: a call the
	// model makes anyway gets their answer (a handover the agent may not
	// make explains why) instead of an unknown tool's error.
	Hidden []Tool
	// Data is added to the run's start values as the template data its
	// instructions are rendered with.
	Data map[string]any
	// MaxTurns bounds its model calls in one handoff loop (DefaultMaxTurns
	// if zero).
	MaxTurns int
	// Guardrails check its steps before the agent's own.
	Guardrails []guardrail.Guardrail
	// Compaction keeps its history within its window when the agent has
	// no compaction of its own.
	Compaction *compact.Config
}

// As returns a Driver whose steps act as agent a: Model, ModelStep, Ask,
// Round, Tools and Delegate call its model with its instructions (rendered
// with o.Data), tools, handoffs, hooks, guardrails and compaction;
// CheckInput runs its input guardrails; Compacted drops what its
// compaction summarized; Agent is its name, which Journal and Await set as
// the run's active agent. Steps of a's are journaled under the keys the
// strategy gives, attributed to a. d itself is unchanged.
//
// Each call plans a again (its instructions rendered anew), so a strategy
// whose template data change (a shared context) calls As before each step.
// The agents a hands off to replace those of earlier calls of As, so As is
// not for concurrent branches of Parallel with different agents.
func (d *Driver) As(a *Agent, o Acting) (*Driver, error) {
	if d.checking {
		return nil, fmt.Errorf("%w: a strategy's Check runs no steps", ErrInvalid)
	}
	if a == nil {
		return nil, fmt.Errorf("%w: As needs an agent", ErrInvalid)
	}
	r := d.r
	r.plan.agents = map[string]*agentPlan{}
	r.plan.srcs = map[string]agentSrc{a.Name: {agent: a, place: "strategy of " + r.info.id}}
	ts := append(slices.Clip(a.Tools), o.Tools...)
	ts = append(ts, o.Hidden...)
	data := make(map[string]any, len(r.values)+len(o.Data))
	maps.Copy(data, r.values)
	maps.Copy(data, o.Data)
	ap, err := r.rt.planAgent(r.plan, a.Name, false, a.Instructions, a.Model, ts, a.Handoffs, o.MaxTurns, &a.Hooks, data, r.info)
	if err != nil {
		return nil, err
	}
	hidden := map[string]bool{}
	for _, t := range o.Hidden {
		hidden[t.Name()] = true
	}
	ap.toolDefs = slices.DeleteFunc(ap.toolDefs, func(d model.ToolDef) bool { return hidden[d.Name] })
	ar := AgentRun{Agent: a, Guardrails: o.Guardrails, Compaction: o.Compaction}
	if ap, err = ar.resolve(ap); err != nil {
		return nil, err
	}
	c := *d
	c.ap = ap
	return &c, nil
}

// root is the agent the Driver's steps act as.
func (d *Driver) root() *agentPlan {
	if d.ap != nil {
		return d.ap
	}
	return d.r.plan.root
}

// asUpdate adds to u, for a Driver made by As, its agent as the run's
// active agent.
func (d *Driver) asUpdate(u store.Update) store.Update {
	if d.ap != nil {
		u.Agent = d.ap.name
	}
	return u
}

// stampKey carries a StampResults function in a round's context.
type stampKey struct{}

// StampResults returns ctx with fn, which Round and Tools (given the
// returned context) call with the result event of each of their tool
// calls before it is journaled: a strategy adds to it its own state the
// call changed (a conversation's shared context in Shared, a handover's
// target in Target), journaled in the same append as the result, so that
// a replay finds the state with the result. fn returns a function called
// once the result is journaled (or not), which may release what fn held
// to order the appends of results carrying the state. fn runs on the
// tool calls' goroutines, at once.
func StampResults(ctx context.Context, fn func(ev *Event) (journaled func())) context.Context {
	return context.WithValue(ctx, stampKey{}, fn)
}

// stampResult calls the StampResults function of ctx, if any, on ev.
func stampResult(ctx context.Context, ev *Event) (journaled func()) {
	fn, ok := ctx.Value(stampKey{}).(func(ev *Event) (journaled func()))
	if !ok {
		return func() {}
	}
	if done := fn(ev); done != nil {
		return done
	}
	return func() {}
}
