package swarm

import (
	"encoding/json"
	"time"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// EventType names an event. Every journal record is one event; an event's
// type is its record's type.
type EventType string

// The event types.
const (
	// EventStarted opens every run: Swarm, Input, MaxTurns.
	EventStarted EventType = "started"
	// EventModelResponse is a model's answer: Agent, Text, ToolCalls, Usage.
	EventModelResponse EventType = "model_response"
	// EventModelError is a failed model call attempt: Agent, Reason, Kind.
	EventModelError EventType = "model_error"
	// EventToolCall announces a tool call from a model response: Agent,
	// Tool, CallID, Arguments.
	EventToolCall EventType = "tool_call"
	// EventToolResult is a tool's outcome: Agent, Tool, CallID, Output,
	// IsError, and Parts (for the model) and ResultParts (for the run's
	// result) when the tool attached any.
	EventToolResult EventType = "tool_result"
	// EventHandoffStarted announces a delegation: Agent (from), Target,
	// CallID, Request.
	EventHandoffStarted EventType = "handoff_started"
	// EventHandoffReturned is a delegation's outcome: Agent (from), Target,
	// Tool (the handoff tool), CallID, Output, IsError.
	EventHandoffReturned EventType = "handoff_returned"
	// EventTurnCompleted closes a round: Agent, Turn, MaxTurns.
	EventTurnCompleted EventType = "turn_completed"
	// EventPaused: the run waits for a human: Reason, Context, Turn; Kind
	// is "budget" when the run tree's budget caused the pause.
	EventPaused EventType = "paused"
	// EventResumed: a human answered a pause: Message, and Parts when the
	// answer carries any (a user's message sent with WithMessageParts).
	EventResumed EventType = "resumed"
	// EventCompleted: the run succeeded: Result, and Parts, the result's
	// parts by reference (see Completed.Parts).
	EventCompleted EventType = "completed"
	// EventFailed: the run failed: Reason.
	EventFailed EventType = "failed"
	// EventStopped: the run was stopped from outside: Reason.
	EventStopped EventType = "stopped"
	// EventRecorded is a value a strategy recorded with strategy.Driver.Record:
	// Kind (the strategy's label), Result (the value), or Output and
	// IsError when its function failed.
	EventRecorded EventType = "recorded"
	// EventGuardrail is a guardrail's verdict on a step: Guardrail,
	// Kind (the point), Verdict, Reason (the verdict's message), and Tool,
	// CallID, Target for calls and handoffs.
	EventGuardrail EventType = "guardrail"
	// EventCompacted is a compaction of an agent's history: Agent, Text
	// (the summary), Compaction (range and tokens), Usage.
	EventCompacted EventType = "compacted"
	// EventDelta is streamed model text (Agent, Text). Deltas are not
	// journaled: they reach live subscribers only and have Seq 0.
	EventDelta EventType = "delta"
)

// Event is one thing that happened to a run. The fields used depend on Type
// (see the EventType constants); the rest are zero. Events marshal to JSON
// as they are stored in the journal.
type Event struct {
	// Seq is the event's position in the run's journal (1-based).
	Seq   int64     `json:"seq,omitempty"`
	Type  EventType `json:"type,omitempty"`
	Time  time.Time `json:"time,omitzero"`
	RunID string    `json:"run_id,omitempty"`
	// Key is the journal step key.
	Key string `json:"key,omitempty"`
	// Agent is the agent (or swarm orchestrator) the event is attributed to.
	Agent     string           `json:"agent,omitempty"`
	Swarm     string           `json:"swarm,omitempty"`
	Input     json.RawMessage  `json:"input,omitempty"`
	Values    map[string]any   `json:"values,omitempty"`
	Turn      int              `json:"turn,omitempty"`
	MaxTurns  int              `json:"max_turns,omitempty"`
	Call      int              `json:"call,omitempty"`
	Text      string           `json:"text,omitempty"`
	ToolCalls []model.ToolCall `json:"tool_calls,omitempty"`
	Tool      string           `json:"tool,omitempty"`
	CallID    string           `json:"call_id,omitempty"`
	Arguments json.RawMessage  `json:"arguments,omitempty"`
	Target    string           `json:"target,omitempty"`
	Request   string           `json:"request,omitempty"`
	Output    string           `json:"output,omitempty"`
	IsError   bool             `json:"is_error,omitempty"`
	Kind      string           `json:"kind,omitempty"`
	Reason    string           `json:"reason,omitempty"`
	Context   string           `json:"context,omitempty"`
	Message   string           `json:"message,omitempty"`
	Result    json.RawMessage  `json:"result,omitempty"`
	Usage     *model.Usage     `json:"usage,omitempty"`
	// RequestHash is, on a model_response, a digest of the request the
	// model was sent, against which Runtime.Request checks its rebuild.
	RequestHash string `json:"request_hash,omitempty"`
	// Child is the child run of a swarm handoff (handoff_started,
	// handoff_returned, and paused when the pause comes from below).
	Child string `json:"child,omitempty"`
	// Waiting is, on a paused event surfaced from below, the descendant run
	// that actually waits for an answer.
	Waiting string `json:"waiting,omitempty"`
	// Depth is a run's distance from its root run (started).
	Depth int `json:"depth,omitempty"`
	// Parent is the parent run of a child run (started).
	Parent string `json:"parent,omitempty"`
	// Params are call-site overrides, recorded by name (started).
	Params *paramsRecord `json:"params,omitempty"`
	// Customization is what a parent's model added to this child (started).
	Customization *Customization `json:"customization,omitempty"`
	// Budget is the budget of the run's tree (started).
	Budget *Budget `json:"budget,omitempty"`
	// Root is, for a child run with a budget, the root run of its tree,
	// whose row holds the tree's budget pool (started).
	Root string `json:"root,omitempty"`
	// Deadline is when the run's wall-time budget ends (started).
	Deadline time.Time `json:"deadline,omitzero"`
	// Shared is a conversation's shared context after the step (reply, and
	// the tool_result of a tool or handover that changed it).
	Shared json.RawMessage `json:"shared,omitempty"`
	// Ledger and Progress are a strategy's own JSON in its own events
	// (see strategy.Driver.RecordEvent): the adaptive loop's task ledger (event
	// "ledger") and progress ledger of a round (event "progress"), which
	// package adaptive decodes.
	Ledger   json.RawMessage `json:"ledger,omitempty"`
	Progress json.RawMessage `json:"progress,omitempty"`
	// State is a team member's lifecycle state (member).
	State string `json:"state,omitempty"`
	// Mail is a mail a team member sent (mail), and Mails the mails it
	// received at once (inbox).
	Mail  *store.Mail  `json:"mail,omitempty"`
	Mails []store.Mail `json:"mails,omitempty"`
	// Task is a task of a team's board as a member's step left it (task).
	Task *store.Task `json:"task,omitempty"`
	// Protocol is a team protocol request as a member's step left it
	// (protocol).
	Protocol *store.Request `json:"protocol,omitempty"`
	// ForkOf is, on a fork's started event, the run it was forked from
	// (see [Runtime.Fork]); ForkAt the step key it was forked at ("" for
	// a re-run from the start) and Reused the number of the origin's
	// records it reused, which follow the started event.
	ForkOf string `json:"fork_of,omitempty"`
	ForkAt string `json:"fork_at,omitempty"`
	Reused int    `json:"reused,omitempty"`
	// Edited marks, in a fork, a reused record whose output the fork
	// replaced (see [ForkEdit]).
	Edited bool `json:"edited,omitempty"`
	// Guardrail and Verdict are a guardrail's name and decision
	// (guardrail).
	Guardrail string `json:"guardrail,omitempty"`
	Verdict   string `json:"verdict,omitempty"`
	// Trace is the W3C traceparent of the run's span when it started
	// (started), so that every drive of the run, after a crash too,
	// continues the same trace.
	Trace string `json:"trace,omitempty"`
	// Instance tells the run from an earlier run with the same id,
	// deleted since (started): a random stamp that every key derived
	// from the run includes (its tools' idempotency keys, the memory
	// writes they make), so that an id used again is a new run
	// everywhere. It is empty in runs started before it existed.
	Instance string `json:"instance,omitempty"`
	// Compaction is the range and tokens of a compaction (compacted).
	Compaction *compact.Info `json:"compaction,omitempty"`
	// Takeover is, on the first record a process journals after it took
	// the run over from a process whose lease had run out (one that died,
	// or lost touch with the store), who took it over from whom, when, and
	// which steps were asked again. Journals written before takeovers were
	// recorded have none.
	Takeover *store.Takeover `json:"takeover,omitempty"`
	// Attempt is, on a model_response, model_error or tool_result, 2 when
	// the step was asked again because the process that first asked it
	// died before recording its outcome (see Takeover); 0 otherwise.
	Attempt int `json:"attempt,omitempty"`

	// Parts are the images, files and audio of a run's input (started),
	// a user's message (resumed), a tool's result (tool_result) or the
	// run's result (completed), large ones by blob reference.
	Parts []model.Part `json:"parts,omitempty"`
	// ResultParts are the parts a tool added to the run's result with
	// AttachOutput (tool_result).
	ResultParts []model.Part `json:"result_parts,omitempty"`
}
