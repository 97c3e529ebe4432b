package strategy

import (
	"context"
	"encoding/json"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Driver is a run being driven by its [Strategy]: the durable primitives a
// strategy is written in. It is safe for concurrent use by the branches of
// Parallel.
type Driver struct{ e engine }

// engine is the engine's side of a Driver: each primitive of the run, as
// package swarm implements it.
type engine interface {
	RunID() string
	Input() json.RawMessage
	Agent() string
	AtTurn(n int) any
	Model(ctx context.Context, key string, msgs []model.Message) (*model.Response, error)
	ModelStep(ctx context.Context, key string, msgs []model.Message, events []swarm.Event, ackMail int64, outside bool) (*model.Response, error)
	Tools(ctx context.Context, key string, calls []model.ToolCall) ([]seam.ToolResult, error)
	Round(ctx context.Context, key string, calls []model.ToolCall) ([]seam.ToolResult, error)
	Delegate(ctx context.Context, key, target, request string) (string, error)
	DelegateParts(ctx context.Context, key, target, request string, parts []model.Part) (string, error)
	AwaitParts(ctx context.Context, key string, q seam.Question) (string, []model.Part, error)
	Record(ctx context.Context, key, kind string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error)
	Recorded(key string) (json.RawMessage, bool, error)
	Parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) []error
	ParallelLimit(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) []error
	Sleep(ctx context.Context, key string, dur time.Duration) error
	As(a *swarm.Agent, tools, hidden []swarm.Tool, data map[string]any, maxTurns int, gs []guardrail.Guardrail, c *compact.Config) (any, error)
	Checkpoint(ctx context.Context, key string, state any)
	Restore(v any) (bool, error)
	StartChildren(ctx context.Context, children ...seam.Child) error
	RecordedEvent(key string) (swarm.Event, bool, error)
	Journaled(types ...swarm.EventType) ([]swarm.Event, error)
	Journal(ctx context.Context, events []swarm.Event, waiting string, working bool) error
	CheckInput(ctx context.Context, key, text string) (string, error)
	Compacted(msgs []model.Message) []model.Message
	Mailbox(ctx context.Context, limit int) ([]store.Mail, error)
	AwaitMail(ctx context.Context, key string, with ...swarm.Event) error
	Runtime() *swarm.Runtime
	Roster() []seam.Target
	ToolNames() []string
	ResultSchema() json.RawMessage
	Result(text string) (json.RawMessage, error)
	Ask(ctx context.Context, key string, o seam.AskOptions, msgs []model.Message) (string, error)
	RecordEvent(ctx context.Context, key string, fn func(ctx context.Context) (swarm.Event, error)) (swarm.Event, error)
	Parts() []model.Part
}

// newDriver wraps the engine's driver d.
func newDriver(d any) *Driver { return &Driver{e: d.(engine)} }

// RunID is the run's id.
func (d *Driver) RunID() string { return d.e.RunID() }

// Input is the run's input as JSON.
func (d *Driver) Input() json.RawMessage { return d.e.Input() }

// Agent is the name of the run's orchestrator (the swarm's id), the agent
// that Model calls and Await and Record are attributed to.
func (d *Driver) Agent() string { return d.e.Agent() }

// AtTurn returns a Driver whose steps belong to turn n of the run, for a
// strategy that counts its own rounds: their events carry Turn n, and the
// run's status shows it. d itself is unchanged.
func (d *Driver) AtTurn(n int) *Driver { return newDriver(d.e.AtTurn(n)) }

// Runtime returns the runtime driving the run: its store, definitions
// and handles, for what a strategy's tools do outside the journal.
func (d *Driver) Runtime() *swarm.Runtime { return d.e.Runtime() }

// Model calls the orchestrator's model with msgs after its system prompt
// and offers it the orchestrator's tools; the response is journaled under
// key+"/model". Retries, guardrails, compaction, usage and the model call
// limit apply as in the tool-calling loop. A failure of the model (after
// its retries) is returned as a [*Failure].
func (d *Driver) Model(ctx context.Context, key string, msgs []model.Message) (*model.Response, error) {
	return d.e.Model(ctx, key, msgs)
}

// Step is what ModelStep journals with a new model response, in the same
// append: what the strategy put in the request that must be consumed
// exactly once.
type Step struct {
	// Events are journaled before the response (the mails the request
	// carried, say), each with its own key.
	Events []swarm.Event
	// AckMail acknowledges the run's mailbox up to this mail sequence
	// number (see Mailbox): the mails the request carried are consumed
	// when, and only when, the response is journaled. A crash before
	// delivers them again; none is consumed twice.
	AckMail int64
	// Outside marks the step as taking up a piece of work from outside
	// the run tree (a user's mail, a task the user added): in a tree
	// whose call limits count per piece of outside work
	// (swarm.Budget.PerWork), they count afresh from this call. Mail
	// and tasks from the tree's own runs are not outside work: marking
	// them would let a loop of runs mailing each other run unbounded.
	Outside bool
}

// ModelStep is Model with s: the response is journaled under key+"/model"
// together with s.Events and the acknowledgement of s.AckMail (in the
// Driver's turn: see AtTurn). A replay returns the journaled response and
// journals nothing (s is then ignored: check RecordedEvent(key+"/model")
// to tell).
func (d *Driver) ModelStep(ctx context.Context, key string, msgs []model.Message, s Step) (*model.Response, error) {
	return d.e.ModelStep(ctx, key, msgs, s.Events, s.AckMail, s.Outside)
}

// AskOptions say how [Driver.Ask] calls a model.
type AskOptions struct {
	// Agent is the agent that answers: the orchestrator when empty, or
	// one of the run's agents (an agent of Roster).
	Agent string
	// System is added to the agent's system prompt, after a blank line.
	System string
	// Schema, when set, asks for a reply that is JSON matching it
	// (structured output, where the provider supports it).
	Schema json.RawMessage
}

// Ask calls the model of an agent with msgs after its system prompt,
// offering it no tools, and returns the reply's text (tool calls in it are
// dropped, never journaled): the calls of a strategy that asks a model for
// a judgement or a plan rather than for actions. The response is
// journaled under key+"/model"; retries, guardrails, compaction, usage
// and limits apply as in Model, and a failure of the model is returned as
// a [*Failure].
func (d *Driver) Ask(ctx context.Context, key string, o AskOptions, msgs []model.Message) (string, error) {
	return d.e.Ask(ctx, key, seam.AskOptions(o), msgs)
}

// ToolResult is the outcome of one tool call run by Tools or Round.
type ToolResult struct {
	// Output is the tool's output (an error message when IsError).
	Output  string
	IsError bool
	// Parts are the tool's parts (see swarm.AttachParts), by reference:
	// give them to the model with Output, in the tool message.
	Parts []model.Part
}

// toolResults converts the engine's tool results.
func toolResults(rs []seam.ToolResult, err error) ([]ToolResult, error) {
	if err != nil {
		return nil, err
	}
	out := make([]ToolResult, len(rs))
	for i, r := range rs {
		out[i] = ToolResult(r)
	}
	return out, nil
}

// Tools runs calls, the tool calls of the response Model journaled under
// key (which announced them), in parallel, each outcome journaled under
// key+"/tool/<call id>": the orchestrator's tools, handoffs to agents
// (their own loop, nested under the call's key) and to swarms (child
// runs). The built-in tools complete, pause and fail are the tool-calling
// loop's: a strategy that wants them reads the calls itself (or sets
// swarm.Spec.NoBuiltins so they are not offered).
func (d *Driver) Tools(ctx context.Context, key string, calls []model.ToolCall) ([]ToolResult, error) {
	return toolResults(d.e.Tools(ctx, key, calls))
}

// Round runs calls, the tool calls of the response ModelStep journaled
// under key, like Tools, and ends the round, the Driver's turn (see
// AtTurn): its turn_completed event is journaled under key+"/done" with
// the last result (or after them, when a result was replayed). The
// built-in tools complete, pause and fail are refused as by Tools when
// the run's agent is offered them; else a call of one is an unknown tool,
// answered with an error result.
func (d *Driver) Round(ctx context.Context, key string, calls []model.ToolCall) ([]ToolResult, error) {
	return toolResults(d.e.Round(ctx, key, calls))
}

// Target is an agent or a swarm a run may delegate to (see
// [Driver.Roster]).
type Target struct {
	// Name is the agent's name or the swarm's id.
	Name string
	// Description is what the orchestrator's model is told the target
	// does.
	Description string
	// Swarm is set for a swarm, which runs as a child run, and unset for
	// an agent of the run.
	Swarm bool
	// TextInput is set for an agent and for a swarm whose input is text;
	// another swarm takes Delegate's request as its JSON input.
	TextInput bool
}

// Roster lists the agents and swarms the run may delegate to (the
// swarm's Spec.Handoffs), in order, with what a strategy needs to know of
// each.
func (d *Driver) Roster() []Target {
	ts := d.e.Roster()
	out := make([]Target, len(ts))
	for i, t := range ts {
		out[i] = Target(t)
	}
	return out
}

// ToolNames lists the orchestrator's own tools, which Model offers besides
// the handoffs and the built-in tools: the swarm's Tools (absorbed agents
// and dynamic tool sets by their names) and the registry tools.
func (d *Driver) ToolNames() []string { return d.e.ToolNames() }

// ResultSchema is the JSON schema of the run's result, or nil when the
// result is text.
func (d *Driver) ResultSchema() json.RawMessage { return d.e.ResultSchema() }

// Result makes the run's result of a model's text answer, as the
// tool-calling loop does: any text is the result of a swarm whose result
// is text; otherwise the text must be JSON (fenced in ``` or not) that
// matches the result schema.
func (d *Driver) Result(text string) (json.RawMessage, error) { return d.e.Result(text) }

// Delegate hands request to target, one of Roster, and returns its
// answer: an agent runs its own tool-calling loop (steps nested under
// key), a swarm runs as a child run (waiting for it holds no lease when it
// pauses; for a swarm whose input is not text, request is its JSON input,
// and the answer is its JSON result). The delegation is journaled as a
// handoff under key (key+"/call/next" when it starts, key+"/tool/next" with
// its answer; an agent's own steps below key+"/h/") and counts toward the
// nesting depth limit. A target that fails, or is not one of Roster,
// returns a [*Failure].
func (d *Driver) Delegate(ctx context.Context, key, target, request string) (string, error) {
	return d.e.Delegate(ctx, key, target, request)
}

// Parts returns the parts attached to the run's input (see
// swarm.WithParts), large ones by reference: a strategy passes them on
// with DelegateParts or Child.Parts.
func (d *Driver) Parts() []model.Part { return d.e.Parts() }

// DelegateParts is Delegate passing parts to the target instead of the
// run's input parts: the target agent sees them with its request, a
// target swarm's child run with its input. Parts are given with their
// bytes or a URL, or by reference as Parts and ToolResult.Parts hold
// them (a reference must name a blob of this run); the child run refers
// to the blobs, which are not copied. Invalid parts are an error wrapping
// swarm.ErrInvalidInput. The strategy passes the same parts when the step
// is replayed.
func (d *Driver) DelegateParts(ctx context.Context, key, target, request string, parts []model.Part) (string, error) {
	return d.e.DelegateParts(ctx, key, target, request, parts)
}

// Question is what a run asks a human in Await.
type Question struct {
	// Reason is the question (shown as the pause's reason).
	Reason string
	// Context is what the human needs to answer it.
	Context string
	// Kind names the kind of question for user interfaces (for example
	// "input" for a form whose JSON schema is Context).
	Kind string
}

// Await asks a human q and returns the answer once the journal holds it.
// Until then the run pauses: Await returns an error wrapping
// [ErrAwaiting], which the strategy returns, and when Drive returns the
// question is journaled under key (once) and the run paused; no goroutine
// waits and the run holds no lease. A resume of the run is the answer;
// Drive then runs again and Await returns it.
func (d *Driver) Await(ctx context.Context, key string, q Question) (string, error) {
	msg, _, err := d.e.AwaitParts(ctx, key, seam.Question(q))
	return msg, err
}

// AwaitParts is Await returning also the parts the answer carries (a
// user's message sent with swarm.WithMessageParts), large ones by
// reference as the journal holds them: a strategy puts them on the
// model.Message it gives the model (model steps load the bytes) and hands
// them on with [WithConversationParts]. A replay returns the same parts.
func (d *Driver) AwaitParts(ctx context.Context, key string, q Question) (string, []model.Part, error) {
	return d.e.AwaitParts(ctx, key, seam.Question(q))
}

// Record runs fn once and journals what it returned under key (an event of
// type swarm.EventRecorded, with kind in its Kind), so that a replay gets
// the same value without running fn: a strategy's own decisions, values
// from the clock or a random number, and Go functions with effects. An
// error of fn is journaled too and returned as a [*Failure] on every
// replay, unless it is an interruption (the context's error), which is not
// journaled. fn's context carries the step's swarm.IdempotencyKey, and a
// panic in fn is its failure. Each run of fn counts as a tool execution
// toward the run tree's limit.
func (d *Driver) Record(ctx context.Context, key, kind string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	return d.e.Record(ctx, key, kind, fn)
}

// Recorded returns the value [Driver.Record] journaled under key on an
// earlier drive of the run, and whether there is one; a journaled error
// returns as a [*Failure]. It runs nothing and journals nothing.
//
// A strategy uses it to learn a decision it recorded before a crash or a
// pause (the winner of a race, a timeout) before deciding what to start:
// replaying a race's losers or a timed-out step would start work that the
// recorded decision already stopped. It sees the journal as it was when
// the drive began: a value recorded during this drive is not reported.
func (d *Driver) Recorded(key string) (json.RawMessage, bool, error) {
	return d.e.Recorded(key)
}

// RecordEvent journals a strategy's own event under key, once: the event
// fn returns, whose type must not be one of the engine's (its Key is set
// to key, its Agent defaults to the orchestrator and its Turn to the
// Driver's turn). When the journal holds a record under key, RecordEvent
// returns that event and does not run fn, so that a strategy's state (a
// plan, a counter) replays as it was recorded. fn may run other steps; an
// error of fn is returned and nothing is journaled.
//
// The event reaches the run's history and live subscribers like the
// engine's own. Of Event's fields, a strategy may fill any but Seq, Time
// and RunID; Ledger and Progress carry a strategy's JSON.
func (d *Driver) RecordEvent(ctx context.Context, key string, fn func(ctx context.Context) (swarm.Event, error)) (swarm.Event, error) {
	return d.e.RecordEvent(ctx, key, fn)
}

// RecordedEvent returns the event the journal holds under key (of any
// type, where Recorded returns a value of Record), as loaded when this
// drive began: a strategy's replay check before a step it journals itself
// (with Journal, AwaitMail or Step.Events). ok is false when the journal
// (as loaded) has no such record; records appended by this drive are not
// looked up.
func (d *Driver) RecordedEvent(key string) (ev swarm.Event, ok bool, err error) {
	return d.e.RecordedEvent(key)
}

// Journaled returns the events of the journal as loaded when this drive
// began whose type is one of types, in journal order: what a strategy
// rebuilds its state from on replay (after a snapshot, only the records
// after it: see Checkpoint).
func (d *Driver) Journaled(types ...swarm.EventType) ([]swarm.Event, error) {
	return d.e.Journaled(types...)
}

// Entry is what Journal appends: events, and the run's state they put it
// in, in one atomic append.
type Entry struct {
	// Events are the strategy's records, each with its own key (Agent,
	// when empty, is the run's agent). Types that begin or end the run are
	// the runtime's own.
	Events []swarm.Event
	// Waiting, when set, marks the run paused with this reason (a
	// strategy that journals its own pause event then returns an error
	// wrapping ErrAwaiting; see also AwaitMail).
	Waiting string
	// Working marks a paused run running again (its pause answered by
	// one of Events).
	Working bool
}

// Journal appends e in one append, leaving out events whose key the
// journal (as loaded) holds: a Journal repeated on replay appends only
// what the first attempt did not. A strategy journals with it what it
// decided from something outside the journal (a mailbox, a task board),
// so that a replay takes the decision from the journal (see
// RecordedEvent).
func (d *Driver) Journal(ctx context.Context, e Entry) error {
	return d.e.Journal(ctx, e.Events, e.Waiting, e.Working)
}

// CheckInput runs the run's input guardrails on text, a message the
// strategy is about to give the model (a user's message, a prompt); the
// verdicts are journaled under key+"/guard/...", so a replay gets the same
// ones. It returns the reason of a rejection ("" when text is allowed); a
// guardrail that pauses for a human returns an error wrapping ErrAwaiting,
// one that trips a *Failure that Ends the run.
func (d *Driver) CheckInput(ctx context.Context, key, text string) (string, error) {
	return d.e.CheckInput(ctx, key, text)
}

// Compacted returns the history msgs of the run's agent without what its
// compaction summary already replaces (msgs as is when compaction is off
// or has not summarized msgs): a strategy that keeps a long history (a
// member woken many times) keeps it bounded with it before checkpointing.
func (d *Driver) Compacted(msgs []model.Message) []model.Message { return d.e.Compacted(msgs) }

// Parallel runs fn for branches 0 to n-1 at once (at most
// swarm.Config.MaxParallel at a time) and returns each branch's error, nil
// for those that succeeded. Each branch is durable by its keys: give every
// branch keys of its own (key+"/"+strconv.Itoa(i)). A branch that awaits
// an answer does not stop the others; the run pauses once Drive returns
// ErrAwaiting, and on the drive after the answer the finished branches
// return their recorded outcomes at once. Until Drive returns, the run
// keeps its lease and the question is not yet journaled, so what the other
// branches do meanwhile is journaled in this drive; a Drive that fails
// instead leaves no question behind, and so does one that completes after
// cancelling the context the question was asked under (a race stopping
// its losers withdraws their questions). A Drive that completes while a
// question is still pending dropped its ErrAwaiting: the run fails saying
// so. Parallel returns early only when ctx ends. A panic in a branch is
// its [*Failure].
func (d *Driver) Parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) []error {
	return d.e.Parallel(ctx, n, fn)
}

// ParallelLimit is [Driver.Parallel] with at most limit branches at a
// time instead of swarm.Config.MaxParallel (which a limit of 0 or less
// keeps).
func (d *Driver) ParallelLimit(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) []error {
	return d.e.ParallelLimit(ctx, n, limit, fn)
}

// Sleep waits until dur after the first time the run reached key: the
// deadline is recorded, so a run recovered elsewhere waits only for what
// is left of it (and not at all once it has passed). The run keeps its
// lease while it sleeps.
func (d *Driver) Sleep(ctx context.Context, key string, dur time.Duration) error {
	return d.e.Sleep(ctx, key, dur)
}

// Checkpoint snapshots the run at a boundary of its strategy: the record
// under key ends the boundary, and state (JSON-encoded) is what the
// strategy needs to go on from there. It must be all of it: a recovery
// from the checkpoint loads only the journal after key (RecordedEvent and
// Journaled see no earlier record) and Restore returns state. key must be
// in the journal as loaded (a boundary this drive reached is checkpointed
// by a later one). Checkpoint does nothing until Config.SnapshotEvery
// records (see [CheckpointEvery]) were added since the newest snapshot, or
// when the store keeps no snapshots; a failure is logged and costs only a
// longer replay.
func (d *Driver) Checkpoint(ctx context.Context, key string, state any) {
	d.e.Checkpoint(ctx, key, state)
}

// Restore decodes into v the state of the checkpoint this drive continues
// from, and reports whether there is one (false: Drive starts from its
// first step, with the whole journal loaded).
func (d *Driver) Restore(v any) (bool, error) { return d.e.Restore(v) }
