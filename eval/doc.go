// Package eval evaluates swarms: eval sets of cases with expectations
// (output, trajectory, forbidden calls, bounds, rubrics for a judge
// model), scorers, durable eval runs, and comparisons between
// configurations.
//
// # Sets
//
// A [Set] is written in YAML or JSON ([Load], [Parse]: every mistake is
// reported with its file and line, unknown fields included) or built in
// Go ([Validate] checks it as Parse would). Each case gives the swarm
// under test an input, the turns of a conversation, the messages to a
// team's lead, or a [Scenario] a simulated user plays. [MarshalYAML]
// writes a set back; [CaseFromRun] and [SetFromRuns] make cases of
// recorded runs, their observed output and trajectory as the expectation
// to review.
//
// # Eval runs
//
// An eval run is a run of the runtime like any other: a run of swarm
// [SwarmID], which [Define] defines on a runtime, whose input is the set
// and whose result is the [Report]. [Start] starts one, [Wait] waits for
// its report, [Run] does both. Each case's run is a child run of the eval
// run (a run of the swarm under test, started with the case's input and
// values), at most the set's Parallel at once. Once it has settled, what
// it did is read from its journal and the journals of the runs below it
// ([Observed]: status, output, calls in order, transcript, turns, model
// calls, tokens, cost, time) and journaled in the eval run, then scored;
// a judge's and a simulated user's questions are model calls journaled as
// steps of the eval run, under "case/<id>/...". An eval run killed halfway
// continues where it stopped, on any process that shares the store and
// defines the eval runner: a case whose result is journaled is not run or
// scored again, and no journaled model response of a case's run, a judge
// or a simulated user is asked for again. Each finished case journals an
// [EventCase] event with the eval run's [Progress].
//
// # Bounds
//
// A simulated user writes at most its scenario's MaxTurns messages
// (DefaultScenarioTurns when unset, at most MaxScenarioTurns); a judge's
// malformed answers are asked again a bounded number of times, then the
// case is an error. The eval run tree (the eval run, the cases' runs, the
// judges and the simulated users) is bounded by a budget of
// swarm.DefaultMaxModelCalls model calls and swarm.DefaultMaxToolCalls
// tool calls per case ([Start]); reaching it fails the eval run with a
// reason naming the limit.
//
// # Comparisons
//
// [Compare] compares two reports of a set case by case, with the exact
// McNemar test on the paired pass/fail outcomes ([McNemar]) and the
// Wilcoxon signed-rank test on the paired scores ([Wilcoxon]), and says
// in words whether the change is better beyond noise.
//
// Package eval/evaltest runs a set from go test, a subtest a case.
package eval
