// Package strategy is the open engine's seam: the durable primitives a
// kind of run is written in, the way database/sql/driver is the seam of
// database/sql. Every built-in kind of run is a strategy on it (the
// conversation, the adaptive loop, teams, workflows) and a program's own
// kinds of run are written the same way.
//
// A [Strategy] is straight-line Go over a [Driver]: call a model as an
// agent (Model, ModelStep, Ask, As), run a round of tool calls (Round,
// Tools: parallel calls, handoffs and child swarms included), delegate to
// an agent or a swarm (Delegate), wait for a human, a mail or a child
// without holding a goroutine or a lease (Await, AwaitMail,
// StartChildren), record a value (Record, RecordEvent, Journal), run
// branches in parallel, each durable (Parallel), and wait on a durable
// timer (Sleep). Give a swarm one with swarm.Spec{Strategy: Of(s)}; its
// runs are then driven by s instead of the model's tool-calling loop.
//
// # The rules of replay
//
// Drive runs again from its start after every crash, restart, pause and
// recovery. Each primitive looks its step key up in the journal first: a
// step with a recorded outcome returns that outcome and does nothing else,
// so a Drive that follows the rules continues at the first step without
// one and never redoes a completed step. The rules:
//
//  1. Step keys are a function of the run's input and of what earlier
//     primitives returned: never of the clock, a random number, map
//     iteration order or anything else outside the journal. Use Record for
//     any such value, and for any decision made from one.
//  2. Each key names one step. A key is one or more segments separated by
//     "/"; the runtime adds its own segments below it ("<key>/model",
//     "<key>/tool/<id>"), and "start" and "end" are its own. A primitive
//     given a key that an earlier one used in the same drive, of whatever
//     kind, is refused with an error wrapping swarm.ErrInvalid that names
//     both (Model and Tools of one round share theirs: the tools are the
//     response's).
//  3. Side effects belong inside primitives: a Go function with effects
//     runs inside Record (at least once, like a tool: use
//     swarm.IdempotencyKey).
//
// Every primitive counts toward the run tree's limits and budgets: model
// calls (swarm.Config.MaxModelCalls), tool executions and recorded
// functions (swarm.Config.MaxToolCalls), tokens, cost and wall time. A
// strategy that loops is bounded by them even if it forgets its own bound,
// and ends in a failure that names the limit. A long-lived strategy
// ([LongLived]: a conversation, a team) has its call limits counted per
// piece of work from outside its tree, and pauses at them instead.
//
// Package swarmtest/strategytest crash-tests a strategy: it runs it once
// to learn its journal, then kills and recovers it at every record, on
// every store, and checks that no completed step is redone.
package strategy
