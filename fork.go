package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/swarmrt/swarm/store"
)

// ForkOption configures [Runtime.Fork].
type ForkOption func(*forkConfig)

type forkConfig struct {
	id        string
	input     json.RawMessage
	values    map[string]any
	setValues bool
}

// ForkID gives the fork a caller-chosen id (default: a new random id). A
// fork never reuses a run: an id that is taken gives store.ErrExists.
func ForkID(id string) ForkOption { return func(c *forkConfig) { c.id = id } }

// ForkInput replaces the input of the fork. The reused steps were taken
// with the origin's input; the steps from the fork point on see this one.
func ForkInput(input json.RawMessage) ForkOption {
	return func(c *forkConfig) { c.input = input }
}

// ForkValues replaces the values (the data of the instruction templates)
// of the fork.
func ForkValues(values map[string]any) ForkOption {
	return func(c *forkConfig) { c.values, c.setValues = values, true }
}

// Fork starts a new run of the swarm of run id that reuses the origin's
// journal up to the step at (a step key of the origin's journal, as in
// its events) and executes everything from that step on: the recorded
// steps before it are copied into the new run's journal and replayed, not
// executed again (no model call, tool or child run is repeated), as a
// recovery replays them. This is re-running from a step (with the origin's
// input and values) or, with [ForkInput] and [ForkValues], forking with
// an edited input.
//
// An empty at (or "start") re-runs the origin from its beginning with
// nothing reused. The fork point is moved back to the first record of the
// journal append that recorded at, so that a fork never holds half of a
// step (a model response without the tool calls announced with it). A
// pause before the fork point that the origin had answered after it makes
// the fork paused at once, to be answered anew.
//
// The fork is a top-level run with its own budget pool; its started event
// names its origin (Event.ForkOf, ForkAt, Reused). The origin may be in
// any state, and is not changed. Fork returns the new run's id at once;
// the run proceeds in the background like a started one. Errors: the
// origin unknown (store.ErrNotFound), its swarm not registered here
// (ErrUnknownSwarm), a step key not in its journal or an invalid input
// (ErrInvalidInput).
func (rt *Runtime) Fork(ctx context.Context, id, at string, opts ...ForkOption) (string, error) {
	var fc forkConfig
	for _, o := range opts {
		o(&fc)
	}
	origin, err := rt.store.Get(ctx, id)
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	info, err := rt.info(origin.Swarm)
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	recs, err := rt.store.Read(ctx, id, 0, 0)
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	if len(recs) == 0 || recs[0].Type != string(EventStarted) {
		return "", fmt.Errorf("fork %s: the journal has no start record", id)
	}
	start, err := decodeEvent(recs[0])
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	cut := 1
	if at != "" && at != recs[0].Key {
		cut = -1
		for i, rec := range recs {
			if rec.Key == at {
				cut = i
				break
			}
		}
		if cut < 0 {
			return "", fmt.Errorf("%w: fork %s: no step %q in its journal", ErrInvalidInput, id, at)
		}
		for cut > 1 && recs[cut-1].Time.Equal(recs[cut].Time) {
			cut--
		}
	}
	input, values := start.Input, start.Values
	if fc.input != nil {
		if !json.Valid(fc.input) {
			return "", fmt.Errorf("%w: fork %s: input is not valid JSON", ErrInvalidInput, id)
		}
		input = fc.input
	}
	if fc.setValues {
		values = fc.values
	}
	plan, err := rt.buildPlan(info, input, values, start.Params, start.Customization)
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	forkID := fc.id
	if forkID == "" {
		forkID = newID()
	} else if err := checkRunID(forkID); err != nil {
		return "", err
	}

	reused := recs[1:cut]
	ev := start
	ev.Seq, ev.Type, ev.Key, ev.Time = 0, "", "", time.Time{}
	ev.Input, ev.Values = input, values
	ev.Parent, ev.Depth, ev.Root = "", 0, ""
	ev.ForkOf, ev.ForkAt, ev.Reused = id, "", len(reused)
	if cut < len(recs) && cut > 1 {
		ev.ForkAt = recs[cut].Key
	}
	ev.Deadline = time.Time{}
	ev.Budget = rt.treeBudget(ev.Budget) // an origin started before the runtime's limits gets them
	if ev.Budget != nil && ev.Budget.WallTime > 0 {
		ev.Deadline = time.Now().Add(ev.Budget.WallTime)
	}
	data, err := json.Marshal(&ev)
	if err != nil {
		return "", fmt.Errorf("fork %s: encode start: %w", id, err)
	}
	records := make([]store.Record, 0, len(reused)+1)
	records = append(records, store.Record{Key: recs[0].Key, Type: string(EventStarted), Data: data, Time: time.Now()})
	// The reused steps are not charged to the fork: the origin spent them.
	// The fork's usage starts at zero and counts only the calls it makes.
	var (
		pending *Event
		answers = map[string]bool{}
	)
	for _, rec := range reused {
		rec.Seq = 0
		records = append(records, rec)
		answers[rec.Key] = true
		if EventType(rec.Type) == EventPaused {
			e, err := decodeEvent(rec)
			if err != nil {
				return "", fmt.Errorf("fork %s: %w", id, err)
			}
			pending = &e
		}
	}
	if pending != nil && answers[resumeKey(*pending)] {
		pending = nil
	}
	lease, err := rt.store.Create(ctx, store.Run{ID: forkID, Swarm: info.id, MaxTurns: plan.root.maxTurns, Agent: info.id}, rt.owner, rt.cfg.Lease, records)
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	if pending != nil {
		// The fork waits where the origin waited; a resume continues it.
		if _, err := rt.store.Append(ctx, lease, nil, store.Update{State: store.Paused, Reason: pending.Reason}); err != nil {
			return "", fmt.Errorf("fork %s: %w", id, err)
		}
	}
	rt.notes.notify(forkID)
	if pending == nil {
		rt.launch(lease, &runner{rt: rt, id: forkID, info: info})
	}
	return forkID, nil
}
