package swarm

import (
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
)

// DefaultMaxTurns bounds the rounds of a swarm or agent that sets none. A
// round is one model response plus the execution of its tool calls.
const DefaultMaxTurns = 10

// Agent is a named model persona with its own instructions, tools and
// handoffs. When a swarm (or another agent) hands off to an agent, the agent
// runs its own tool-calling loop on the request, with a fresh conversation,
// and its final text answer becomes the handoff's result. An agent never sees
// another agent's conversation or tool calls.
type Agent struct {
	// Name identifies the agent; it must match [a-zA-Z0-9_-]+ and is used in
	// the handoff tool's name (handoff_to_<name>).
	Name string
	// Description tells other agents what this agent is for; it becomes the
	// handoff tool's description unless the handoff overrides it.
	Description string
	// Instructions is the agent's system prompt, a text/template rendered
	// against the run's values (see [WithValues]); the swarm input is
	// available as {{.Input}}.
	Instructions string
	// Model is an optional model spec ("openai:gpt-4.1-mini") overriding the
	// runtime's default model for this agent.
	Model string
	// Tools are the functions the agent may call.
	Tools []Tool
	// Handoffs are the agents this agent may delegate to.
	Handoffs []Handoff
	// MaxTurns bounds the agent's loop (DefaultMaxTurns when zero).
	MaxTurns int
	// Hooks observe this agent's tool calls, handoffs and errors.
	Hooks Hooks
	// Guardrails check this agent's steps, after the swarm's (see
	// [guardrail.Guardrail]).
	Guardrails []guardrail.Guardrail
	// Compaction keeps this agent's history within its model's context
	// window (nil: the swarm's setting).
	Compaction *compact.Config
}
