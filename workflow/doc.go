// Package workflow builds deterministic workflows: typed steps composed in
// Go (a sequence, parallel branches with a join, a bounded loop, a route, a
// graph) whose nodes are agents, swarms (teams and conversations
// included), Go functions and human input, run durably by the swarm
// runtime.
//
// A workflow is a swarm definition ([Define] returns a *swarm.Swarm), so a
// runtime runs it like any other: swarm run, the HTTP API, A2A, MCP, fork
// and the dashboard work unchanged. It is a [strategy.Strategy] written on the
// public seam only: every node is a journaled step under a key that names
// it, so a workflow killed anywhere continues at its first unfinished node
// (on any process that shares the store), and nothing it finished runs
// again.
//
// # Keys
//
// A node's key is the keys of the steps around it and its own name, joined
// by "/": "review/draft" is node draft of the parallel step review. A
// sequence ([Then], or flat: [Seq], [Chain]) adds no segment of its own; a loop adds the round
// ("polish/2/edit"), a graph the visit after the first
// ("flow/3/draft"), and a retry "~<attempt>" after the first attempt
// ("fetch~2"). Names are letters, digits, '_' and '-', not only digits, and
// neither "start" nor "end" (the runtime's own keys).
//
// # Graphs
//
// A [Graph] takes every edge of a node that holds: when several do, their
// targets run in parallel, each the first node of a branch, and the
// branches meet at one node declared a join ([Graph.Join]: all of the
// branches the fork started, the first, a quorum), which runs once on
// their outputs by node name (or what a [Reducer] makes of them). A graph
// whose meaning would be ambiguous (branches that never meet, or meet at
// an undeclared node, and so on) is refused when it is made, naming the
// nodes. Which edges held and which branches a join took are journaled.
//
// # Decisions that depend on timing
//
// A first or quorum join and a timeout depend on which branch finishes
// first or on the clock. The workflow records each such decision
// ([strategy.Driver.Record]) and, on a later drive, reads it back before
// starting anything ([strategy.Driver.Recorded]): a recovered workflow
// replays the recorded winners and does not start the losers again.
//
// # Bounds
//
// Every loop in a workflow is bounded: a [Loop] by its rounds, a [Graph] by
// its steps, an LLM router and a human-input node by their tries, a retry
// by its attempts. Reaching a bound fails the workflow with a reason that
// names the node and the bound. The run tree's limits and budgets
// (swarm.Config) count every node too.
//
// # Feedback
//
// A loop an evaluator ends ([UntilAgent]) carries the evaluator's answer on
// a round that is not done, why not, into the next round: its agent and
// swarm nodes get it after their input ("Feedback on the previous round:
// ..."), and its Go functions read it with [Feedback]. The answer is
// journaled, so a replay gives the round the same feedback.
//
// # Earlier results
//
// A Go function a node runs reads the output of any node that finished
// before it, by name and typed, with [Output]: a node earlier in its
// sequence, a branch an earlier join took, and so on outward, without
// the steps in between passing it on.
//
// # Shape
//
// [Describe] gives a workflow's shape for a reader that draws it (the
// dashboard's Nodes tab): every step in order, the branch of a parallel
// step or a route each is on, joins, bounds, the evaluator or router, a
// graph's start and its edges with their conditions ([Graph.EdgeLabeled]).
//
// # Telemetry
//
// Each drive of a workflow has an OpenTelemetry span invoke_workflow
// {id} (gen_ai.operation.name invoke_workflow) under the run's span, and
// each node a span workflow_node {key} (swarm.workflow.node,
// swarm.workflow.node.kind) under it; the agents a node runs have their
// invoke_agent spans below. Spans go to the runtime's
// Config.TracerProvider.
package workflow
