package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/swarmrt/swarm"
)

// CaseFromRun makes a case of recorded run runID (of any swarm, finished
// or waiting), for a user to review before adding it to a set: its input
// is the run's input (or the user messages it took, as Turns), its values
// the run's, and its expectation what the run did: its output exactly,
// its tool calls and handoffs in order (Match "in_order", arguments
// compared by the fields they had), and its status when it did not
// complete. Its ID is the run's id (a digest of it when the id is not fit
// for a case), From the run's id.
func CaseFromRun(ctx context.Context, rt *swarm.Runtime, runID string) (Case, error) {
	evs, err := rt.History(ctx, runID, 0)
	if err != nil {
		return Case{}, fmt.Errorf("case from run %s: %w", runID, err)
	}
	if len(evs) == 0 || evs[0].Type != swarm.EventStarted {
		return Case{}, fmt.Errorf("case from run %s: %w: its journal has no start", runID, swarm.ErrInvalidState)
	}
	start := evs[0]
	o, err := Observe(ctx, rt, runID)
	if err != nil {
		return Case{}, fmt.Errorf("case from run %s: %w", runID, err)
	}
	c := Case{ID: caseIDOf(runID), From: runID, Values: start.Values}
	for _, ev := range evs {
		if ev.Type == swarm.EventResumed && isMessageKey(ev.Key) {
			c.Turns = append(c.Turns, ev.Message)
		}
	}
	if len(c.Turns) == 0 {
		c.Input = inputText(start.Input)
	}
	out := o.Output
	c.Expect.Output = &Output{Exact: &out}
	if o.Status != string(swarm.StateCompleted) {
		c.Expect.Status = o.Status
	}
	if len(o.Calls) > 0 {
		t := &Trajectory{Match: "in_order"}
		for _, oc := range o.Calls {
			call := Call{Name: oc.Name, Agent: oc.Agent, ArgsMatch: "fields"}
			var args map[string]any
			if json.Unmarshal(oc.Args, &args) == nil && len(args) > 0 {
				call.Args = args
			}
			t.Calls = append(t.Calls, call)
		}
		c.Expect.Trajectory = t
	}
	if c.Input == "" && len(c.Turns) == 0 {
		return c, fmt.Errorf("case from run %s: %w: the run had no input and took no message", runID, swarm.ErrInvalidState)
	}
	return c, nil
}

// caseIDOf is the ID of a case made of run id.
func caseIDOf(id string) string {
	if len(id) <= MaxIDLen && !strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '/' }) {
		return id
	}
	return childID("run", id)[len("run.case."):]
}

// SetFromRuns makes a set named name of recorded runs runIDs, a case of
// each (see [CaseFromRun]), to run their inputs again against a changed
// definition of their swarm and compare what they do. The runs must be
// runs of one swarm.
func SetFromRuns(ctx context.Context, rt *swarm.Runtime, name string, runIDs ...string) (*Set, error) {
	s := &Set{Name: name}
	for _, id := range runIDs {
		st, err := rt.Status(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("set from runs: %w", err)
		}
		if s.Swarm != "" && st.Swarm != s.Swarm {
			return nil, fmt.Errorf("%w: set from runs: run %s is a run of %s, not of %s", swarm.ErrInvalidInput, id, st.Swarm, s.Swarm)
		}
		s.Swarm = st.Swarm
		c, err := CaseFromRun(ctx, rt, id)
		if err != nil {
			return nil, err
		}
		s.Cases = append(s.Cases, c)
	}
	if err := Validate(s); err != nil {
		return nil, fmt.Errorf("set from runs: %w", err)
	}
	return s, nil
}
