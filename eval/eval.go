package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
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

// Start starts an eval run of s on rt (whose eval runner [Define]
// defined) and returns its id without waiting for it. The set is checked
// first ([Validate]), and so are its swarm under test and its agents
// (registered on rt). With o.RunID empty, the id is derived from the set
// and o, so that the same command continues an unfinished eval run: an
// eval run of the same set and options that has ended makes the next
// command start a new one ("-2", "-3", ... after the derived id).
//
// The eval run tree (the eval run, every case's run, the judges and the
// simulated users) is bounded by a budget of swarm.DefaultMaxModelCalls
// model calls and swarm.DefaultMaxToolCalls tool calls per case.
func Start(ctx context.Context, rt *swarm.Runtime, s *Set, o RunOptions) (string, error) {
	if s == nil {
		return "", fmt.Errorf("%w: no eval set", swarm.ErrInvalidInput)
	}
	if err := Validate(s); err != nil {
		return "", fmt.Errorf("%w: eval set %s: %w", swarm.ErrInvalidInput, s.Name, err)
	}
	if !registered(rt, SwarmID) {
		return "", fmt.Errorf("%w: %q (eval.Define defines the eval runner)", swarm.ErrUnknownSwarm, SwarmID)
	}
	if !registered(rt, s.Swarm) {
		return "", fmt.Errorf("%w: the swarm under test, %q, is not registered", swarm.ErrUnknownSwarm, s.Swarm)
	}
	in := Input{Set: s, Config: o.Config, Tags: o.Tags}
	raw, err := json.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("eval set %s: %w", s.Name, err)
	}
	n := int64(len(selected(&in)))
	if n == 0 {
		return "", fmt.Errorf("%w: no case of set %s has one of the tags %s", swarm.ErrInvalidInput, s.Name, strings.Join(o.Tags, ", "))
	}
	id := o.RunID
	if id == "" {
		if id, err = nextID(ctx, rt, raw); err != nil {
			return "", err
		}
	}
	b := swarm.Budget{ModelCalls: n * swarm.DefaultMaxModelCalls, ToolCalls: n * swarm.DefaultMaxToolCalls}
	return rt.Start(ctx, SwarmID, raw, swarm.WithID(id), swarm.WithBudget(b))
}

// maxRepeats bounds the derived ids Start tries for one set.
const maxRepeats = 10_000

// nextID derives the id of an eval run of input raw: the first of
// "eval-<digest>", "eval-<digest>-2", ... that is unfinished or free.
func nextID(ctx context.Context, rt *swarm.Runtime, raw []byte) (string, error) {
	sum := sha256.Sum256(raw)
	base := "eval-" + hex.EncodeToString(sum[:8])
	for i := 1; i <= maxRepeats; i++ {
		id := base
		if i > 1 {
			id += "-" + strconv.Itoa(i)
		}
		r, err := rt.Store().Get(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return id, nil
		case err != nil:
			return "", fmt.Errorf("eval run %s: %w", id, err)
		case !r.State.Terminal():
			return id, nil
		}
	}
	return "", fmt.Errorf("%w: %d eval runs of this set already (give a RunID)", swarm.ErrInvalidInput, maxRepeats)
}

// Wait waits for eval run runID to end (driving it here when the process
// that drove it is gone) and returns its report. An eval run that failed
// or was stopped is an error that says why.
func Wait(ctx context.Context, rt *swarm.Runtime, runID string) (*Report, error) {
	st, err := rt.Settle(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("eval run %s: %w", runID, err)
	}
	if st.Swarm != SwarmID {
		return nil, fmt.Errorf("%w: run %s is a run of %s, not an eval run", swarm.ErrInvalidInput, runID, st.Swarm)
	}
	if st.State != swarm.StateCompleted {
		return nil, fmt.Errorf("eval run %s is %s: %s", runID, st.State, st.Reason)
	}
	var r Report
	if err := json.Unmarshal(st.Result, &r); err != nil {
		return nil, fmt.Errorf("eval run %s: report: %w", runID, err)
	}
	return &r, nil
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

// RunProgress reads how far an eval run has come from its events (its
// History, or the events a subscriber has seen): the progress of the
// last EventCase event, and false when there is none yet.
func RunProgress(events []swarm.Event) (Progress, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != EventCase {
			continue
		}
		var p Progress
		if json.Unmarshal(events[i].Progress, &p) == nil {
			return p, true
		}
	}
	return Progress{}, false
}
