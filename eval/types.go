package eval

import (
	"context"
	"encoding/json"
	"time"

	"github.com/swarmrt/swarm/model"
)

// This file is the shape every part of evaluations shares: the eval set as
// a user writes it (YAML, JSON or Go), what a case's run was observed to
// do, the scores, and the report an eval run returns as its result (which
// the CLI, the HTTP API and the dashboard read). Its JSON names are a
// format: change them with care.

// Set is an eval set: cases run against one swarm, scored, and held to a
// threshold.
type Set struct {
	// Name names the set (reports and the dashboard show it).
	Name string `json:"name" yaml:"name"`
	// Description says what the set checks.
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// Swarm is the id of the swarm under test, as the configuration
	// defines it.
	Swarm string `json:"swarm" yaml:"swarm"`
	// Judge is the agent that scores rubrics when a rubric names none.
	Judge string `json:"judge,omitempty" yaml:"judge,omitempty"`
	// Simulator is the agent that plays the user of a case's scenario when
	// the scenario names none.
	Simulator string `json:"simulator,omitempty" yaml:"simulator,omitempty"`
	// Threshold is the pass rate (0 to 1) the set must reach; 0 means 1,
	// every case.
	Threshold float64 `json:"threshold,omitempty" yaml:"threshold,omitempty"`
	// Parallel is how many cases run at once (0: the runner's default).
	Parallel int `json:"parallel,omitempty" yaml:"parallel,omitempty"`
	// Cases are the cases, each with a unique ID.
	Cases []Case `json:"cases" yaml:"cases"`
}

// Case is one input to the swarm under test and what is expected of its
// run.
type Case struct {
	// ID identifies the case within its set (and keys its steps in the
	// eval run's journal).
	ID string `json:"id" yaml:"id"`
	// Input is the run's input: text, or JSON text for a swarm whose
	// input is typed.
	Input string `json:"input,omitempty" yaml:"input,omitempty"`
	// Turns are the user's messages of a conversation, in order (instead
	// of Input).
	Turns []string `json:"turns,omitempty" yaml:"turns,omitempty"`
	// Mail are the messages to a team's lead, in order (instead of
	// Input).
	Mail []string `json:"mail,omitempty" yaml:"mail,omitempty"`
	// Scenario makes a model play the user of a conversation (instead of
	// Turns).
	Scenario *Scenario `json:"scenario,omitempty" yaml:"scenario,omitempty"`
	// Values are the run's parameters (swarm.Params).
	Values map[string]any `json:"values,omitempty" yaml:"values,omitempty"`
	// Tags group cases in reports and select them (--tag).
	Tags []string `json:"tags,omitempty" yaml:"tags,omitempty"`
	// Expect is what the run must do.
	Expect Expect `json:"expect" yaml:"expect"`
	// From names the recorded run the case was made from, if any.
	From string `json:"from,omitempty" yaml:"from,omitempty"`
}

// Scenario is what a simulated user wants: a model plays the user, turn
// by turn, until it says the goal is met or MaxTurns is reached.
type Scenario struct {
	// Goal is what the user wants from the conversation.
	Goal string `json:"goal" yaml:"goal"`
	// Persona is who the user is and how they talk.
	Persona string `json:"persona,omitempty" yaml:"persona,omitempty"`
	// First is the user's first message (the simulator writes it when
	// empty).
	First string `json:"first,omitempty" yaml:"first,omitempty"`
	// MaxTurns bounds the user's messages (0: 5).
	MaxTurns int `json:"max_turns,omitempty" yaml:"max_turns,omitempty"`
	// Agent is the simulator (0: the set's Simulator).
	Agent string `json:"agent,omitempty" yaml:"agent,omitempty"`
}

// Expect is what a case's run must do. Every part set is scored; a case
// passes when every score passes.
type Expect struct {
	// Status is the run's final status ("completed" when empty;
	// "failed", "paused" or "any" otherwise).
	Status string `json:"status,omitempty" yaml:"status,omitempty"`
	// Output is what the final output must be.
	Output *Output `json:"output,omitempty" yaml:"output,omitempty"`
	// Trajectory is which tool calls and handoffs must happen.
	Trajectory *Trajectory `json:"trajectory,omitempty" yaml:"trajectory,omitempty"`
	// Forbid are calls that must not happen.
	Forbid []Call `json:"forbid,omitempty" yaml:"forbid,omitempty"`
	// Bounds bound what the run may spend.
	Bounds *Bounds `json:"bounds,omitempty" yaml:"bounds,omitempty"`
	// Rubrics are scored by a judge model.
	Rubrics []Rubric `json:"rubrics,omitempty" yaml:"rubrics,omitempty"`
	// Scorers name custom scorers (registered in Go) to apply.
	Scorers []string `json:"scorers,omitempty" yaml:"scorers,omitempty"`
}

// Output is what the final output must be; every field set must hold.
type Output struct {
	// Exact is the whole output, compared after trimming space.
	Exact *string `json:"exact,omitempty" yaml:"exact,omitempty"`
	// Contains are substrings the output must contain.
	Contains []string `json:"contains,omitempty" yaml:"contains,omitempty"`
	// Regex is a regular expression (RE2) the output must match.
	Regex string `json:"regex,omitempty" yaml:"regex,omitempty"`
	// Fields are JSON fields (dotted paths) and the values they must
	// have; the output must be JSON.
	Fields map[string]any `json:"fields,omitempty" yaml:"fields,omitempty"`
	// Schema is a JSON schema the output must match.
	Schema json.RawMessage `json:"schema,omitempty" yaml:"schema,omitempty"`
	// Similar is a reference the output must be similar to.
	Similar *Similar `json:"similar,omitempty" yaml:"similar,omitempty"`
}

// Similar compares the output to a reference by token overlap (ROUGE-1
// F1, from 0 to 1).
type Similar struct {
	// Reference is the expected answer.
	Reference string `json:"reference" yaml:"reference"`
	// Min is the least similarity that passes (0: 0.5).
	Min float64 `json:"min,omitempty" yaml:"min,omitempty"`
}

// Trajectory is which calls a run must make.
type Trajectory struct {
	// Match is how Calls are compared with the run's calls: "exact" (the
	// same calls in the same order, nothing else), "in_order" (Calls in
	// order, others between allowed), "any_order" (the same calls in any
	// order, nothing else) or "subset" (Calls among the run's, any
	// order). Empty means "in_order".
	Match string `json:"match,omitempty" yaml:"match,omitempty"`
	// Calls are the expected calls.
	Calls []Call `json:"calls" yaml:"calls"`
}

// Call is a tool call or a handoff, as expected or forbidden.
type Call struct {
	// Name is the tool's or the handoff target's name.
	Name string `json:"name" yaml:"name"`
	// Agent, when set, is the agent that must make the call.
	Agent string `json:"agent,omitempty" yaml:"agent,omitempty"`
	// Args are the arguments (a JSON object); absent means any.
	Args map[string]any `json:"args,omitempty" yaml:"args,omitempty"`
	// ArgsMatch is how Args are compared: "exact" (the same object),
	// "fields" (the fields given have these values; others ignored; the
	// default).
	ArgsMatch string `json:"args_match,omitempty" yaml:"args_match,omitempty"`
	// Ignore names fields (dotted paths) left out of the comparison, such
	// as generated ids.
	Ignore []string `json:"ignore,omitempty" yaml:"ignore,omitempty"`
}

// Bounds bound what a case's run may spend; zero fields are unbounded.
type Bounds struct {
	// Turns bounds the run's turns.
	Turns int `json:"turns,omitempty" yaml:"turns,omitempty"`
	// ModelCalls bounds the run tree's model calls.
	ModelCalls int `json:"model_calls,omitempty" yaml:"model_calls,omitempty"`
	// Tokens bounds the run tree's tokens, input and output.
	Tokens int `json:"tokens,omitempty" yaml:"tokens,omitempty"`
	// Cost bounds the run tree's cost in US dollars.
	Cost float64 `json:"cost,omitempty" yaml:"cost,omitempty"`
	// Duration bounds the run's wall time ("30s").
	Duration Duration `json:"duration,omitempty" yaml:"duration,omitempty"`
}

// Duration is a time.Duration written as "30s" in YAML and JSON.
type Duration time.Duration

// Rubric is a criterion a judge model scores the run by.
type Rubric struct {
	// Name names the score.
	Name string `json:"name" yaml:"name"`
	// Criteria is what the judge checks, in plain words.
	Criteria string `json:"criteria,omitempty" yaml:"criteria,omitempty"`
	// Reference, when set, is an answer the judge compares the output
	// with (instead of, or besides, Criteria).
	Reference string `json:"reference,omitempty" yaml:"reference,omitempty"`
	// Samples is how many times the judge is asked (0: 1); the score is
	// their mean and the agreement is reported.
	Samples int `json:"samples,omitempty" yaml:"samples,omitempty"`
	// Threshold is the least score (0 to 1) that passes (0: 0.5).
	Threshold float64 `json:"threshold,omitempty" yaml:"threshold,omitempty"`
	// Judge is the judge agent (empty: the set's Judge).
	Judge string `json:"judge,omitempty" yaml:"judge,omitempty"`
}

// Observed is what a case's run did, read from its journal: what scorers
// score.
type Observed struct {
	// RunID is the case's run (its child run in the eval run).
	RunID string `json:"run_id"`
	// Status is the run's final status.
	Status string `json:"status"`
	// Reason is why it failed, paused or stopped.
	Reason string `json:"reason,omitempty"`
	// Output is the final output as text (a JSON result as its JSON).
	Output string `json:"output"`
	// Calls are the tool calls and handoffs of the run tree, in journal
	// order.
	Calls []ObservedCall `json:"calls,omitempty"`
	// Transcript is the conversation: the user's messages and the
	// answers, in order (for judges and simulated users).
	Transcript []model.Message `json:"transcript,omitempty"`
	// Turns, ModelCalls, Tokens and Cost are what the run tree spent.
	Turns      int     `json:"turns"`
	ModelCalls int     `json:"model_calls"`
	Tokens     int     `json:"tokens"`
	Cost       float64 `json:"cost,omitempty"`
	// Duration is the run's wall time from its start to its end.
	Duration Duration `json:"duration"`
}

// ObservedCall is a tool call or handoff a run made.
type ObservedCall struct {
	// Kind is "tool" or "handoff".
	Kind string `json:"kind"`
	// Name is the tool's or target's name.
	Name string `json:"name"`
	// Agent is the agent that made the call.
	Agent string `json:"agent,omitempty"`
	// Args are the call's arguments.
	Args json.RawMessage `json:"args,omitempty"`
}

// Score is one scorer's verdict on a case.
type Score struct {
	// Name names the score ("output", "trajectory", "bounds", a rubric's
	// name, a custom scorer's name).
	Name string `json:"name"`
	// Value is the score, from 0 to 1.
	Value float64 `json:"value"`
	// Label is a short verdict ("pass", "fail", a judge's label).
	Label string `json:"label,omitempty"`
	// Explanation says why, for a reader of the report (a diff, the
	// judge's reasoning).
	Explanation string `json:"explanation,omitempty"`
	// Threshold is the least Value that passes.
	Threshold float64 `json:"threshold"`
	// Pass reports whether Value reached Threshold.
	Pass bool `json:"pass"`
	// Agreement is, for a sampled judge, the share of samples that agree
	// with the majority verdict (1 when unanimous).
	Agreement float64 `json:"agreement,omitempty"`
	// Error is set when the scorer could not score (a judge's answers
	// stayed malformed): the case is an error, not a pass.
	Error string `json:"error,omitempty"`
}

// Scorer scores a case from what its run did. Built-in scorers cover
// Expect; a custom scorer is registered in Go and named in
// Expect.Scorers. A scorer must be deterministic given its judge's
// answers: the eval run records its scores, and a replay asks no judge
// again.
type Scorer interface {
	// Name is the scorer's name (Expect.Scorers names it).
	Name() string
	// Score scores c's run o. An error is the case's error.
	Score(ctx context.Context, j Judge, c Case, o Observed) ([]Score, error)
}

// Judge asks a model of the runtime for a judgement, as a journaled step
// of the eval run: a replay returns the answer recorded and calls no
// model.
type Judge interface {
	// Ask asks agent msgs (after its system prompt) under key, unique
	// within the case, and returns the reply's text.
	Ask(ctx context.Context, key, agent string, msgs []model.Message) (string, error)
}

// CaseResult is a case's outcome in a report.
type CaseResult struct {
	// Case is the case's ID; Tags its tags.
	Case string   `json:"case"`
	Tags []string `json:"tags,omitempty"`
	// Input is the case's input (or its first message), for reading.
	Input string `json:"input,omitempty"`
	// Observed is what its run did.
	Observed Observed `json:"observed"`
	// Scores are every scorer's verdict.
	Scores []Score `json:"scores"`
	// Pass reports whether every score passed; Error is set when the case
	// could not be run or scored.
	Pass  bool   `json:"pass"`
	Error string `json:"error,omitempty"`
}

// Report is an eval run's result: the set's cases as run against one
// configuration.
type Report struct {
	// Set is the set's name; Swarm the swarm under test.
	Set   string `json:"set"`
	Swarm string `json:"swarm"`
	// Config names the configuration the swarm was defined by (a
	// swarm.yaml path or a name given in Go).
	Config string `json:"config,omitempty"`
	// RunID is the eval run's id.
	RunID string `json:"run_id"`
	// Cases are the results, in the set's order.
	Cases []CaseResult `json:"cases"`
	// Passed, Failed and Errors count the cases.
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	Errors int `json:"errors"`
	// PassRate is Passed over all cases; Threshold the set's.
	PassRate  float64 `json:"pass_rate"`
	Threshold float64 `json:"threshold"`
	// Pass reports whether PassRate reached Threshold.
	Pass bool `json:"pass"`
	// Scores are the mean of each score by name over the cases that have
	// it.
	Scores map[string]float64 `json:"scores,omitempty"`
	// ModelCalls, Tokens and Cost are what the cases and judges spent.
	ModelCalls int     `json:"model_calls"`
	Tokens     int     `json:"tokens"`
	Cost       float64 `json:"cost,omitempty"`
	// Started and Ended bound the eval run.
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
}

// Comparison compares reports of one set against two configurations:
// Base and Other, case by case.
type Comparison struct {
	// Base and Other are the reports' configurations and eval run ids.
	Base  string `json:"base"`
	Other string `json:"other"`
	// BaseRun and OtherRun are the eval runs.
	BaseRun  string `json:"base_run"`
	OtherRun string `json:"other_run"`
	// Cases are the cases both reports hold, in Base's order.
	Cases []CaseDelta `json:"cases"`
	// PassRate is each report's pass rate; PassRateDelta Other's minus
	// Base's.
	BasePassRate  float64 `json:"base_pass_rate"`
	OtherPassRate float64 `json:"other_pass_rate"`
	PassRateDelta float64 `json:"pass_rate_delta"`
	// Fixed counts cases failing in Base and passing in Other; Broken the
	// reverse.
	Fixed  int `json:"fixed"`
	Broken int `json:"broken"`
	// PassP is the two-sided p-value of the exact McNemar test on the
	// paired pass/fail outcomes: below 0.05, the change in pass rate is
	// beyond noise.
	PassP float64 `json:"pass_p"`
	// Scores compare each score's mean, paired by case.
	Scores []ScoreDelta `json:"scores,omitempty"`
	// Verdict says in words what changed ("better", "worse", "no
	// significant change").
	Verdict string `json:"verdict"`
}

// CaseDelta is one case in a comparison.
type CaseDelta struct {
	// Case is the case's ID.
	Case string `json:"case"`
	// BasePass and OtherPass are its outcomes.
	BasePass  bool `json:"base_pass"`
	OtherPass bool `json:"other_pass"`
	// Scores are Other's score minus Base's, by name.
	Scores map[string]float64 `json:"scores,omitempty"`
	// OutputChanged and TrajectoryChanged report differences in the
	// output and in the calls made; Diff shows them.
	OutputChanged     bool   `json:"output_changed"`
	TrajectoryChanged bool   `json:"trajectory_changed"`
	Diff              string `json:"diff,omitempty"`
}

// ScoreDelta compares one score by name between two reports.
type ScoreDelta struct {
	// Name is the score's name; N the cases both reports scored.
	Name string `json:"name"`
	N    int    `json:"n"`
	// Base and Other are the means; Delta Other's minus Base's.
	Base  float64 `json:"base"`
	Other float64 `json:"other"`
	Delta float64 `json:"delta"`
	// P is the two-sided p-value of the Wilcoxon signed-rank test on the
	// paired scores (1 when every pair is equal).
	P float64 `json:"p"`
}
