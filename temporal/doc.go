// Package temporal runs swarms as Temporal workflows: the same definitions
// as Swarm's own engine, driven by their strategies inside a workflow
// (deterministically).
//
// # How the primitives map
//
// The workflow WorkflowName ("swarm.Run") looks the swarm up in the
// runtime of the worker's process and drives its strategy (the
// tool-calling loop for a swarm without one) on a driver whose primitives
// are Temporal's:
//
//   - Model, ModelStep, Ask, Tools, Round, CheckInput and a delegation to
//     an agent are activities, each taking the Swarm engine's own step on
//     the run's journal in the runtime's store: the model's retries,
//     guardrails, compaction, usage, the tree's budgets and limits and the
//     journal's event shapes are the engine's. An activity retried after
//     its worker died finds its step in the journal and does not call the
//     model or the tool again. Errors cross as the runtime classifies
//     them: a failed step, an invalid step and a pause are non-retryable
//     application errors; an interruption (the store unavailable) is
//     retried by Temporal.
//   - A delegation to a swarm is a child workflow (its run a child run in
//     the store, in the parent's tree, sharing its budget), journaled in
//     the parent as handoff_started and handoff_returned.
//   - Await journals the question and waits for the update UpdateResume
//     (Engine.Resume); Stop is the signal SignalStop.
//   - Record is a local activity (its value in the history and the
//     journal); Recorded, RecordedEvent and Journaled read the journal as
//     loaded when the workflow began; Sleep is a timer; Parallel and
//     ParallelLimit are workflow goroutines.
//   - Checkpoint continues the workflow as new, carrying the strategy's
//     state, once its history passes Options.HistoryLimit; Restore returns
//     the state.
//   - The steps of a driver acting as an agent (As: the workflow/ and
//     adaptive/ kinds) are local activities, since the agent and its tools
//     are Go values of the workflow's process.
//
// The run's row is created in the store leased to the engine for good, so
// the Swarm engine's workers never claim it; a waiting run stays "running"
// with its question as reason (a paused row would be released).
//
// Not supported, refused with an error wrapping ErrUnsupported: teams
// (members' mailboxes: Mailbox, AwaitMail, StartChildren), conversations
// (their turns read the session's messages and shared context from values
// of the context that do not cross into activities), the
// tool-calling loop's handoffs to swarms (a strategy's Delegate to a swarm
// is supported), a pause a strategy journals itself (Journal with
// Waiting) and a guardrail that pauses for a human. Compacted returns the
// history as is.
package temporal
