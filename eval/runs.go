package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
)

// This file reads eval runs back from a runtime's store, for the surfaces
// that list and show them (swarm eval ls and compare, the HTTP API, the
// dashboard): what an eval run is (its set and configuration, from its
// input), how far it has come (from its eval_case events while it runs),
// and its report once it has finished.

// RunInfo is an eval run as a list shows it.
type RunInfo struct {
	// ID is the eval run's id; State its state, Reason why it failed or
	// stopped.
	ID     string      `json:"id"`
	State  swarm.State `json:"state"`
	Reason string      `json:"reason,omitempty"`
	// Set and Swarm are the set's name and the swarm under test; Config
	// the configuration's label; Tags the tags that selected cases.
	Set    string   `json:"set"`
	Swarm  string   `json:"swarm,omitempty"`
	Config string   `json:"config,omitempty"`
	Tags   []string `json:"tags,omitempty"`
	// Done counts the finished cases of Total; Passed, Failed and Errors
	// count them by outcome (the report's, once finished).
	Done   int `json:"done"`
	Total  int `json:"total"`
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	Errors int `json:"errors"`
	// PassRate is Passed over Total (0 until a case has finished);
	// Threshold the set's; Pass whether the finished report reached it.
	PassRate  float64 `json:"pass_rate"`
	Threshold float64 `json:"threshold"`
	Pass      bool    `json:"pass"`
	// Created and Updated are when the eval run started and last changed.
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

// ErrNotEval is returned for a run that is not an eval run.
var ErrNotEval = errors.New("not an eval run")

// Runs lists the eval runs of rt's store, newest first: at most limit (0:
// all).
func Runs(ctx context.Context, rt *swarm.Runtime, limit int) ([]RunInfo, error) {
	runs, err := rt.List(ctx, store.Filter{Swarm: SwarmID, TopLevel: true, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("eval runs: %w", err)
	}
	out := make([]RunInfo, 0, len(runs))
	for _, s := range runs {
		info, _, err := info(ctx, rt, s)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// RunOf reads eval run id: its summary and, once it has finished, its
// report (nil before). A run that is not an eval run is ErrNotEval; one
// the store does not hold swarm.ErrNotFound.
func RunOf(ctx context.Context, rt *swarm.Runtime, id string) (RunInfo, *Report, error) {
	s, err := rt.Status(ctx, id)
	if err != nil {
		return RunInfo{}, nil, err
	}
	if s.Swarm != SwarmID {
		return RunInfo{}, nil, fmt.Errorf("run %s is a run of %s: %w", id, s.Swarm, ErrNotEval)
	}
	return info(ctx, rt, s)
}

// FinishedCases reads the finished cases of an eval run from its journal:
// each case's outcome as its eval_case event holds it, in the order they
// finished (RunProgress reads the last one's counts from events).
func FinishedCases(ctx context.Context, rt *swarm.Runtime, id string) ([]Progress, error) {
	evs, err := rt.History(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	var out []Progress
	for _, ev := range evs {
		if ev.Type != EventCase {
			continue
		}
		var p Progress
		if json.Unmarshal(ev.Progress, &p) == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// info summarizes eval run s, with its report when it has one.
func info(ctx context.Context, rt *swarm.Runtime, s swarm.Status) (RunInfo, *Report, error) {
	i := RunInfo{ID: s.ID, State: s.State, Reason: s.Reason, Created: s.CreatedAt, Updated: s.UpdatedAt}
	recs, err := rt.Store().Read(ctx, s.ID, 0, 1)
	if err != nil {
		return i, nil, fmt.Errorf("eval run %s: %w", s.ID, err)
	}
	if len(recs) == 1 {
		var started swarm.Event
		var in Input
		if json.Unmarshal(recs[0].Data, &started) == nil && json.Unmarshal(started.Input, &in) == nil && in.Set != nil {
			i.Set, i.Swarm, i.Config, i.Tags, i.Threshold = in.Set.Name, in.Set.Swarm, in.Config, in.Tags, in.Set.Threshold
			i.Total = len(infoCases(in.Set, in.Tags))
		}
	}
	if s.State == swarm.StateCompleted {
		var r Report
		if err := json.Unmarshal(s.Result, &r); err != nil {
			return i, nil, fmt.Errorf("eval run %s: its report: %w", s.ID, err)
		}
		i.Set, i.Swarm, i.Config = r.Set, r.Swarm, r.Config
		i.Total, i.Done = len(r.Cases), len(r.Cases)
		i.Passed, i.Failed, i.Errors = r.Passed, r.Failed, r.Errors
		i.PassRate, i.Threshold, i.Pass = r.PassRate, r.Threshold, r.Pass
		return i, &r, nil
	}
	ps, err := FinishedCases(ctx, rt, s.ID)
	if err != nil {
		return i, nil, fmt.Errorf("eval run %s: %w", s.ID, err)
	}
	if n := len(ps); n > 0 {
		p := ps[n-1]
		i.Done, i.Total, i.Passed, i.Failed, i.Errors = p.Done, p.Total, p.Passed, p.Failed, p.Errors
	}
	if i.Total > 0 {
		i.PassRate = float64(i.Passed) / float64(i.Total)
	}
	return i, nil, nil
}

// infoCases is the cases of s that an eval run with tags runs: those
// with one of the tags, or all without tags.
func infoCases(s *Set, tags []string) []Case {
	if len(tags) == 0 {
		return s.Cases
	}
	var out []Case
	for _, c := range s.Cases {
		if infoTagged(c.Tags, tags) {
			out = append(out, c)
		}
	}
	return out
}

func infoTagged(have, want []string) bool {
	for _, t := range have {
		for _, w := range want {
			if t == w {
				return true
			}
		}
	}
	return false
}
