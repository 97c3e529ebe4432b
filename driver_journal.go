package swarm

import (
	"context"
	"fmt"
	"slices"

	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// The journal primitives of a Driver: a strategy's own records, looked up
// by key on replay, and the run's row state that goes with them.

// RecordedEvent implements strategy.Driver.RecordedEvent.
func (d *seamDriver) RecordedEvent(key string) (ev Event, ok bool, err error) {
	rec, ok := d.r.recorded[key]
	if !ok {
		return Event{}, false, nil
	}
	if ev, err = decodeEvent(rec); err != nil {
		return Event{}, false, &seam.Interrupted{Err: err}
	}
	return ev, true, nil
}

// Journaled implements strategy.Driver.Journaled.
func (d *seamDriver) Journaled(types ...EventType) ([]Event, error) {
	recs := make([]store.Record, 0, 8)
	for _, rec := range d.r.recorded {
		if slices.Contains(types, EventType(rec.Type)) {
			recs = append(recs, rec)
		}
	}
	slices.SortFunc(recs, func(a, b store.Record) int { return int(a.Seq - b.Seq) })
	evs := make([]Event, len(recs))
	for i, rec := range recs {
		ev, err := decodeEvent(rec)
		if err != nil {
			return nil, &seam.Interrupted{Err: err}
		}
		evs[i] = ev
	}
	return evs, nil
}

// Journal implements strategy.Driver.Journal.
func (d *seamDriver) Journal(ctx context.Context, events []Event, waiting string, working bool) error {
	evs, err := d.fresh(events)
	if err != nil {
		return err
	}
	var u store.Update
	switch {
	case waiting != "" && working:
		return fmt.Errorf("%w: an entry marks the run either waiting or working", ErrInvalid)
	case waiting != "":
		u = store.Update{State: store.Paused, Reason: waiting, Agent: d.Agent()}
	case working:
		u = store.Update{State: store.Running, ClearReason: true, Agent: d.Agent()}
	case len(evs) == 0:
		return nil
	}
	return d.r.append(ctx, evs, u, d.root())
}

// fresh checks evs and returns those the journal does not hold yet.
func (d *seamDriver) fresh(evs []Event) ([]Event, error) {
	out := make([]Event, 0, len(evs))
	for _, ev := range evs {
		if err := d.checkKey(ev.Key); err != nil {
			return nil, err
		}
		switch ev.Type {
		case "", EventStarted, EventCompleted, EventFailed, EventStopped:
			return nil, fmt.Errorf("%w: step %s: a strategy cannot journal an event of type %q", ErrInvalid, ev.Key, ev.Type)
		}
		if _, ok := d.r.recorded[ev.Key]; ok {
			continue
		}
		if ev.Agent == "" {
			ev.Agent = d.Agent()
		}
		out = append(out, ev)
	}
	return out, nil
}

// CheckInput implements strategy.Driver.CheckInput.
func (d *seamDriver) CheckInput(ctx context.Context, key, text string) (string, error) {
	if err := d.takeStep(key, "CheckInput", kindGuard); err != nil {
		return "", err
	}
	v, g, out, stop := d.r.guardText(ctx, d.root(), key, text)
	switch {
	case !stop && v.Action == guardrail.Reject:
		return guardReason(g, v), nil
	case !stop:
		return "", nil
	case out.kind == paused:
		return "", seam.ErrAwaiting
	case out.kind == interrupted:
		return "", out.err
	}
	return "", seam.NewFailure(out.reason, out.abort)
}

// Compacted implements strategy.Driver.Compacted.
func (d *seamDriver) Compacted(msgs []model.Message) []model.Message {
	return d.r.dropCompacted(d.root(), "", msgs)
}
