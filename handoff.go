package swarm

// Handoff is a delegation target offered to a model as a tool named
// handoff_to_<id>. The target runs its own loop on the request and its final
// answer returns as the tool's result (delegate-and-return).
//
// An agent target ([ToAgent], [ToAgentID]) runs inside the caller's run and
// takes a single string argument, request. A swarm target ([ToSwarm],
// [ToSwarmID]) becomes a child run of its own, linked to its parent; it
// takes the swarm's input (request for text-input swarms, input otherwise)
// and, when [Handoff.Customizable], a customization argument.
type Handoff struct {
	agent        *Agent
	id           string
	description  string
	swarm        Definition
	isSwarm      bool
	customizable bool
	params       *Params
}

// ToSwarm hands off to swarm d: each call starts a child run of d whose
// result (or failure) becomes the call's result. d is registered with the
// runtime when a run using the handoff starts, if it is not yet.
func ToSwarm(d Definition) Handoff {
	if d == nil {
		return Handoff{isSwarm: true}
	}
	return Handoff{swarm: d, id: d.ID(), isSwarm: true}
}

// ToSwarmID hands off to the swarm registered under id; the id is resolved
// when a run starts.
func ToSwarmID(id string) Handoff { return Handoff{id: id, isSwarm: true} }

// Customizable returns a copy of a swarm handoff whose tool accepts a
// customization argument: the calling model may add instructions, registered
// agents and registered tools to the child, and change its max turns. The
// merge is additive; the child's own configuration is never removed.
func (h Handoff) Customizable() Handoff {
	h.customizable = true
	return h
}

// WithParams returns a copy of a swarm handoff whose child runs with p
// replacing the parts of the child's spec that p sets (see [Params]).
func (h Handoff) WithParams(p Params) Handoff {
	h.params = &p
	return h
}

// ToAgent hands off to agent a, given by value.
func ToAgent(a *Agent) Handoff {
	if a == nil {
		return Handoff{}
	}
	return Handoff{agent: a, id: a.Name}
}

// ToAgentID hands off to the agent registered under id with
// [Runtime.RegisterAgent]; the name is resolved when a run starts.
func ToAgentID(id string) Handoff { return Handoff{id: id} }

// WithDescription returns a copy of h whose tool description is d instead of
// the target's own description.
func (h Handoff) WithDescription(d string) Handoff {
	h.description = d
	return h
}

// Target returns the id of the handoff's target.
func (h Handoff) Target() string { return h.id }

// ToolName returns the name of the tool the model calls to take this handoff.
func (h Handoff) ToolName() string { return "handoff_to_" + h.id }
