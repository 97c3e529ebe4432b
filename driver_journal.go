package swarm

import (
	"context"
	"fmt"
	"slices"

	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// The journal primitives of a Driver: a strategy's own records, looked up
// by key on replay, and the run's row state that goes with them.

// RecordedEvent returns the event the journal holds under key (of any
// type, where Recorded returns a value of Record), as loaded when
// this drive began: a strategy's replay check before a step it journals
// itself (with Journal, AwaitMail or Step.Events). ok is false when the
// journal (as loaded) has no such record; records appended by this drive
// are not looked up.
func (d *Driver) RecordedEvent(key string) (ev Event, ok bool, err error) {
	rec, ok := d.r.recorded[key]
	if !ok {
		return Event{}, false, nil
	}
	if ev, err = decodeEvent(rec); err != nil {
		return Event{}, false, &storeError{err}
	}
	return ev, true, nil
}

// Journaled returns the events of the journal as loaded when this drive
// began whose type is one of types, in journal order: what a strategy
// rebuilds its state from on replay (after a snapshot, only the records
// after it: see Checkpoint).
func (d *Driver) Journaled(types ...EventType) ([]Event, error) {
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
			return nil, &storeError{err}
		}
		evs[i] = ev
	}
	return evs, nil
}

// Entry is what Journal appends: events, and the run's state they put it
// in, in one atomic append.
type Entry struct {
	// Events are the strategy's records (Key and Type set; Agent, when
	// empty, is the run's agent). Types that begin or end the run are
	// the runtime's own.
	Events []Event
	// Waiting, when set, marks the run paused with this reason (a
	// strategy that journals its own pause event then returns an error
	// wrapping ErrAwaiting; see also AwaitMail).
	Waiting string
	// Working marks a paused run running again (its pause answered by
	// one of Events).
	Working bool
}

// Journal appends e in one append, leaving out events whose key the
// journal (as loaded) holds: a Journal repeated on replay appends only
// what the first attempt did not. A strategy journals with it what it
// decided from something outside the journal (a mailbox, a task board),
// so that a replay takes the decision from the journal (see
// RecordedEvent).
func (d *Driver) Journal(ctx context.Context, e Entry) error {
	evs, err := d.fresh(e.Events)
	if err != nil {
		return err
	}
	var u store.Update
	switch {
	case e.Waiting != "" && e.Working:
		return fmt.Errorf("%w: an entry marks the run either waiting or working", ErrInvalid)
	case e.Waiting != "":
		u = store.Update{State: store.Paused, Reason: e.Waiting, Agent: d.Agent()}
	case e.Working:
		u = store.Update{State: store.Running, ClearReason: true, Agent: d.Agent()}
	case len(evs) == 0:
		return nil
	}
	return d.r.append(ctx, evs, u, d.root())
}

// fresh checks evs and returns those the journal does not hold yet.
func (d *Driver) fresh(evs []Event) ([]Event, error) {
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

// Interrupted marks err, a failure of something the strategy reads or
// writes outside the journal (a store it calls itself), as an
// interruption: Drive returning it (or an error wrapping it) releases the
// run to continue on a later drive, instead of failing it.
func Interrupted(err error) error {
	if err == nil || isStoreErr(err) {
		return err
	}
	return &storeError{err}
}

// CheckInput runs the run's input guardrails on text, a message the
// strategy is about to give the model (a user's message, a prompt); the
// verdicts are journaled under key+"/guard/...", so a replay gets the same
// ones. It returns the reason of a rejection ("" when text is allowed); a
// guardrail that pauses for a human returns an error wrapping ErrAwaiting,
// one that trips a *Failure that is Final.
func (d *Driver) CheckInput(ctx context.Context, key, text string) (string, error) {
	if err := d.checkKey(key); err != nil {
		return "", err
	}
	v, g, out, stop := d.r.guardText(ctx, d.root(), key, text)
	switch {
	case !stop && v.Action == guardrail.Reject:
		return guardReason(g, v), nil
	case !stop:
		return "", nil
	case out.kind == paused:
		return "", ErrAwaiting
	case out.kind == interrupted:
		return "", out.err
	}
	return "", &Failure{Reason: out.reason, abort: out.abort}
}

// Compacted returns the history msgs of the run's agent without what its
// compaction summary already replaces (msgs as is when compaction is off
// or has not summarized msgs): a strategy that keeps a long history (a
// member woken many times) keeps it bounded with it before checkpointing.
func (d *Driver) Compacted(msgs []model.Message) []model.Message {
	return d.r.dropCompacted(d.root(), "", msgs)
}
