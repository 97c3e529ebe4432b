package swarm

// Handoff is a delegation target offered to a model as a tool named
// handoff_to_<id> with a single string argument, request. The target runs
// its own loop on the request and its final answer returns as the tool's
// result (delegate-and-return).
type Handoff struct {
	agent       *Agent
	id          string
	description string
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
