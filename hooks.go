package swarm

import "context"

// Hooks observe one agent's (or swarm orchestrator's) activity as it happens.
// Hooks fire once per live execution, in the process that executes the step;
// steps restored from the journal during recovery do not fire them again.
// A delegation therefore shows as two observable layers: the delegating
// agent sees it as one of its tool calls (OnToolUse, when it returns, and
// OnHandoff), and the target agent's own hooks fire for the target's tools.
//
// Hooks run synchronously on the run's goroutine; keep them short.
type Hooks struct {
	// OnToolUse receives the outcome of each tool call of the agent: its
	// tool_result events, and the handoff_returned event of each delegation
	// it made (an agent or swarm handoff is a tool call too; e.Tool names
	// the handoff tool).
	OnToolUse func(ctx context.Context, e Event)
	// OnHandoff receives the agent's handoff_started and handoff_returned events.
	OnHandoff func(ctx context.Context, e Event)
	// OnError receives model errors, error tool results and failures.
	OnError func(ctx context.Context, e Event)
}

func (h *Hooks) fire(ctx context.Context, e Event) {
	switch e.Type {
	case EventToolResult:
		if h.OnToolUse != nil {
			h.OnToolUse(ctx, e)
		}
	case EventHandoffStarted:
		if h.OnHandoff != nil {
			h.OnHandoff(ctx, e)
		}
	case EventHandoffReturned:
		if h.OnToolUse != nil {
			h.OnToolUse(ctx, e)
		}
		if h.OnHandoff != nil {
			h.OnHandoff(ctx, e)
		}
	}
	if h.OnError != nil && (e.IsError || e.Type == EventModelError || e.Type == EventFailed) {
		h.OnError(ctx, e)
	}
}
