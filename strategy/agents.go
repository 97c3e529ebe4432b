package strategy

import (
	"context"
	"encoding/json"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
)

// The agent primitives of a Driver: steps taken as one of several agents
// (a conversation's active agent, a router's specialist), definitions
// whose runs are each one agent driven by a strategy (a team: its lead's
// run and each teammate's), and the state a strategy journals with the
// tool results of its rounds.

// Acting says how [Driver.As] plans an agent.
type Acting struct {
	// Tools are offered to the agent besides its own.
	Tools []swarm.Tool
	// Hidden are tools the agent may call but is not offered: a call the
	// model makes anyway gets their answer (a handover the agent may not
	// make explains why) instead of an unknown tool's error.
	Hidden []swarm.Tool
	// Data is added to the run's start values as the template data its
	// instructions are rendered with.
	Data map[string]any
	// MaxTurns bounds its model calls in one handoff loop
	// (swarm.DefaultMaxTurns if zero).
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
func (d *Driver) As(a *swarm.Agent, o Acting) (*Driver, error) {
	e, err := d.e.As(a, o.Tools, o.Hidden, o.Data, o.MaxTurns, o.Guardrails, o.Compaction)
	if err != nil {
		return nil, err
	}
	return newDriver(e), nil
}

// AgentRun is the plan of one run of a definition made with
// [DefineAgentRuns].
type AgentRun struct {
	// Agent is the run's agent: its name names the run's steps in the
	// journal and its usage, and its instructions (a text/template
	// rendered with the run's start values and Data), model, tools,
	// handoffs, hooks, guardrails and compaction are the run's. It is not
	// offered the built-in tools complete, pause and fail.
	Agent *swarm.Agent
	// Data is added to the template data of the agent's instructions.
	Data map[string]any
	// MaxTurns bounds the agent's model calls per round of its strategy
	// (swarm.DefaultMaxTurns if zero).
	MaxTurns int
	// Guardrails check the run's steps before the agent's own.
	Guardrails []guardrail.Guardrail
	// Compaction is the run's when the agent has none of its own.
	Compaction *compact.Config
	// Strategy drives the run.
	Strategy Strategy
}

// engine returns ar as the engine plans it.
func (ar AgentRun) engine() seam.AgentRun {
	sar := seam.AgentRun{Data: ar.Data, MaxTurns: ar.MaxTurns, Guardrails: ar.Guardrails, Compaction: ar.Compaction, Strategy: Of(ar.Strategy)}
	if ar.Agent != nil {
		sar.Agent = ar.Agent
	}
	return sar
}

// Check reports what would make a run planned as ar fail: no agent or
// strategy, a bad guardrail or compaction. A definition checks its
// AgentRuns with it when it is made, to report mistakes on registration.
func (ar AgentRun) Check() error { return seam.CheckAgentRun(ar.engine()) }

// DefineAgentRuns makes a definition whose runs are agent runs planned by
// plan from the run's input and start values (see [AgentRun]). Its input
// is a JSON string or null and its result a string. err, when not nil, is
// what registering the definition reports (a mistake its maker found).
func DefineAgentRuns(id, description string, plan func(input json.RawMessage, values map[string]any) (AgentRun, error), err error) swarm.Definition {
	return seam.DefineAgentRuns(id, description, func(input json.RawMessage, values map[string]any) (seam.AgentRun, error) {
		ar, err := plan(input, values)
		return ar.engine(), err
	}, err).(swarm.Definition)
}

// Child is a run StartChildren starts: a run of the same definition as
// the run being driven (or of the registered definition Swarm names),
// whose plan is built from Input and Values.
type Child struct {
	// ID is the child's run id.
	ID string
	// Input is the child's input (JSON; null if empty).
	Input json.RawMessage
	// Values are the child's start values, which its definition's spec
	// sees (as a team's member sees its name and role).
	Values map[string]any
	// Parts are attached to the child's input (as swarm.WithParts does),
	// given as DelegateParts takes them: a reference names a blob of the
	// run being driven, which the child refers to, not a copy.
	Parts []model.Part
	// Swarm, when set, is the id of a definition registered with the
	// runtime that the child runs instead of the run's own: a run that
	// starts runs of definitions it does not know in advance (an eval
	// run, the swarm under test) without their being its handoffs. An
	// unknown id is an error wrapping swarm.ErrUnknownSwarm.
	Swarm string
}

// StartChildren starts children as child runs of the run being driven
// that it does not wait for: each lives on by itself (pausing, waking and
// ending on its own), one nesting level deeper, within the run tree's
// limits, budget and deadline, and is stopped with its parent. All of them
// are stored before any is driven, so the first can reach the last at
// once.
//
// Starting a child again (the same ID and Values) does nothing, so a step
// repeated after a crash starts each child once; a run with the ID and
// other values is an error wrapping swarm.ErrDuplicate. The start is not
// journaled: the strategy journals it after StartChildren returns (see
// Journal) and, on replay, skips what the journal says it started.
func (d *Driver) StartChildren(ctx context.Context, children ...Child) error {
	cs := make([]seam.Child, len(children))
	for i, c := range children {
		cs[i] = seam.Child(c)
	}
	return d.e.StartChildren(ctx, cs...)
}

// StampResults returns ctx with fn, which Round and Tools (given the
// returned context) call with the result event of each of their tool
// calls before it is journaled: a strategy adds to it its own state the
// call changed (a conversation's shared context in Shared, a handover's
// target in Target), journaled in the same append as the result, so that
// a replay finds the state with the result. fn returns a function called
// once the result is journaled (or not), which may release what fn held
// to order the appends of results carrying the state. fn runs on the
// tool calls' goroutines, at once.
func StampResults(ctx context.Context, fn func(ev *swarm.Event) (journaled func())) context.Context {
	return context.WithValue(ctx, seam.StampKey{}, fn)
}

// WithConversationParts returns ctx under which the handoffs and tools
// of a round see parts as those of the calling agent's conversation: a
// strategy that keeps its own conversation (msgs, by reference as the
// model steps keep them) sets it for Round and Tools, so that a child
// swarm gets them and a tool can forward them
// (swarm.ConversationParts). The tool-calling loop sets it itself.
func WithConversationParts(ctx context.Context, msgs []model.Message) context.Context {
	return context.WithValue(ctx, seam.HandKey{}, seam.Handing{Parts: seam.ConvParts(msgs)})
}
