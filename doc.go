// Package swarm is a runtime for durable multi-agent LLM swarms.
//
// A developer defines agents ([Agent]: instructions, typed [Tool]s and
// [Handoff]s to other agents) and typed swarms ([Swarm] with an input type In
// and a result type Out). A [Runtime] drives the model's tool-calling loop
// until the swarm completes, pauses for a human, fails or is stopped.
//
// The model is the orchestrator; the runtime makes it durable. Every model
// response, tool result, handoff outcome, pause, resume and stop is appended
// to the run's journal (a [store.Store]) before the run moves on. A process
// killed at any moment loses nothing: another process (or the same one,
// restarted) claims the run once its lease expires, replays the journal, and
// continues at the first step that has no recorded outcome.
//
// Delivery guarantees: every step is recorded exactly once in the journal. A
// step that was executing when its process died runs again (at least once),
// so a tool with side effects should use [IdempotencyKey] to make a repeat a
// no-op. Steps with a recorded outcome never run again.
package swarm
