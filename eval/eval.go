package eval

import (
	"context"
	"errors"

	"github.com/swarmrt/swarm"
)

// SwarmID is the id of the eval runner swarm: every eval run is a run of
// it, its input the set and the run's options (JSON, see [Input]), its
// result the [Report] (JSON). The dashboard and the HTTP API find eval
// runs by it.
const SwarmID = "eval"

// DefaultParallel is how many cases an eval run runs at once when
// neither the set nor [Options] say.
const DefaultParallel = 4

// Options configure the eval runner swarm of a runtime (see [Define]).
type Options struct {
	// Scorers are the custom scorers, by the name Expect.Scorers gives
	// them.
	Scorers map[string]Scorer
	// Parallel is how many cases run at once when the set does not say
	// (0: DefaultParallel).
	Parallel int
}

// RunOptions configure one eval run (see [Start]).
type RunOptions struct {
	// RunID is the eval run's id. Empty, it is derived from the set and
	// Config, so that the same command continues an unfinished eval run
	// instead of starting another.
	RunID string
	// Config labels the configuration under test (a swarm.yaml path or a
	// name), for reports and comparisons.
	Config string
	// Tags, when set, select the cases with at least one of them.
	Tags []string
}

// Define defines the eval runner swarm ([SwarmID]) on rt, with o's custom
// scorers: once per runtime, in every process that may start or recover
// eval runs (swarm serve does it).
func Define(rt *swarm.Runtime, o Options) error {
	return rt.Register(Definition(o))
}

// Definition returns the eval runner swarm with o's custom scorers, for
// a runtime's Register (Define registers it).
func Definition(o Options) swarm.Definition {
	return nil
}

// Start starts an eval run of s on rt (whose eval runner Define defined)
// and returns its id without waiting for it. Starting it again with the
// same id (the derived one too) returns the id of the run that exists.
func Start(ctx context.Context, rt *swarm.Runtime, s *Set, o RunOptions) (string, error) {
	return "", errors.New("eval: not implemented yet")
}

// Wait waits for eval run runID to end and returns its report.
func Wait(ctx context.Context, rt *swarm.Runtime, runID string) (*Report, error) {
	return nil, errors.New("eval: not implemented yet")
}

// Run starts an eval run of s and waits for its report ([Start], then
// [Wait]).
func Run(ctx context.Context, rt *swarm.Runtime, s *Set, o RunOptions) (*Report, error) {
	id, err := Start(ctx, rt, s, o)
	if err != nil {
		return nil, err
	}
	return Wait(ctx, rt, id)
}

// Load reads an eval set from the YAML or JSON file at path (by its
// extension: .json is JSON, anything else YAML). Mistakes name the file
// and the line.
func Load(path string) (*Set, error) {
	return nil, errors.New("eval: not implemented yet")
}

// Parse reads an eval set from data, YAML or JSON (JSON is YAML too);
// name names it in errors (a file name, or "" for none).
func Parse(data []byte, name string) (*Set, error) {
	return nil, errors.New("eval: not implemented yet")
}

// Compare compares two reports of one set, case by case: pass changes,
// score deltas, changed outputs and trajectories, and paired statistics.
func Compare(base, other *Report) *Comparison {
	return &Comparison{}
}

// CaseFromRun makes a case of recorded run runID: its input is the run's
// input and its expectation the run's observed output and trajectory, for
// a user to review before adding it to a set.
func CaseFromRun(ctx context.Context, rt *swarm.Runtime, runID string) (Case, error) {
	return Case{}, errors.New("eval: not implemented yet")
}

// EventCase is the type of the event an eval run journals when a case
// has finished (its Kind is "eval_case" too): Progress holds a
// [Progress] as JSON, so that a progress bar or the dashboard follows an
// eval run from its events.
const EventCase swarm.EventType = "eval_case"

// Progress is how far an eval run has come, as each EventCase event
// holds it: Case is the case that has just finished.
type Progress struct {
	Case   string `json:"case"`
	Pass   bool   `json:"pass"`
	Done   int    `json:"done"`
	Total  int    `json:"total"`
	Passed int    `json:"passed"`
	Failed int    `json:"failed"`
	Errors int    `json:"errors"`
}

// Input is an eval run's input: the set and the run's options.
type Input struct {
	Set    *Set     `json:"set"`
	Config string   `json:"config,omitempty"`
	Tags   []string `json:"tags,omitempty"`
}

// MarshalYAML writes s as YAML, in the format Parse reads.
func MarshalYAML(s *Set) ([]byte, error) {
	return nil, errors.New("eval: not implemented yet")
}
