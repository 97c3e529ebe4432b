package swarm

import (
	"slices"

	"github.com/swarmrt/swarm/store"
)

// takeover is what a runner knows of the process it took its run over
// from, until it journals it (see runner.retake).
type takeover struct {
	store.Takeover
	// tools are the tool calls (by call id) the dead process had announced
	// without recording their results: they run again.
	tools map[string]bool
}

// noteTakeover prepares the takeover of a run whose claim took it from an
// owner whose lease had run out (r.lease.From), given the journal as that
// owner left it (after its snapshot, if the run has one). It is journaled
// on the first record the drive appends, which says which step the dead
// process had in flight: a model call asked again is the first one this
// drive records, unless tool calls were in flight.
func (r *runner) noteTakeover(recs []store.Record) {
	l := r.lease
	if l.From == "" || l.From == l.Owner {
		return
	}
	t := &takeover{Takeover: store.Takeover{Node: l.Owner, From: l.From, Epoch: l.Epoch, At: r.claimed, LeaseUntil: l.FromUntil},
		tools: map[string]bool{}}
	if len(recs) > 0 {
		t.LastSeen = recs[len(recs)-1].Time
	}
	// The dead owner renewed its lease until it died: with a lease as long
	// as this runtime's (the usual case: one configuration), it was alive
	// at the last renewal, FromUntil - Lease.
	if alive := l.FromUntil.Add(-r.rt.cfg.Lease); alive.After(t.LastSeen) && alive.Before(r.claimed) {
		t.LastSeen = alive
	}
	announced := map[string]string{}
	for _, rec := range recs {
		switch EventType(rec.Type) {
		case EventToolCall, EventToolResult:
			ev, err := decodeEvent(rec)
			if err != nil || ev.CallID == "" {
				continue
			}
			if ev.Type == EventToolCall {
				announced[ev.CallID] = rec.Key
			} else {
				delete(announced, ev.CallID)
			}
		}
	}
	for id, key := range announced {
		t.tools[id] = true
		t.Redo = append(t.Redo, key)
	}
	slices.Sort(t.Redo)
	if len(t.tools) > 0 {
		r.redoTools.Store(&t.tools)
	}
	r.takeover.Store(t)
}

// retake returns evs with the takeover on the first if it is not
// journaled yet (see noteTakeover), and the steps the dead process had in
// flight marked as second attempts. The caller calls settle once with
// whether it journaled them. Until the takeover is journaled, appends wait
// for each other, so that it is on the first record the new process
// journals, even with parallel branches.
func (r *runner) retake(evs []Event) (out []Event, settle func(journaled bool)) {
	if r.takeover.Load() == nil || len(evs) == 0 {
		return r.again(evs), func(bool) {}
	}
	r.retakeMu.Lock()
	t := r.takeover.Load()
	if t == nil {
		return r.again(evs), func(bool) { r.retakeMu.Unlock() }
	}
	tk := t.Takeover
	tk.Redo = slices.Clone(tk.Redo)
	out = slices.Clone(evs)
	for i := range out {
		ev := &out[i]
		switch {
		case ev.Type == EventModelResponse && len(t.tools) == 0,
			ev.Type == EventModelError && len(t.tools) == 0,
			ev.Type == EventToolResult && t.tools[ev.CallID]:
			ev.Attempt = 2
			if ev.Type != EventToolResult {
				tk.Redo = append(tk.Redo, ev.Key)
			}
		}
	}
	out[0].Takeover = &tk
	return out, func(journaled bool) {
		if journaled {
			r.takeover.Store(nil)
		}
		r.retakeMu.Unlock()
	}
}

// again marks, in appends after the takeover's, the results of the tool
// calls the dead process had in flight as second attempts: parallel calls
// return one by one.
func (r *runner) again(evs []Event) []Event {
	tools := r.redoTools.Load()
	if tools == nil {
		return evs
	}
	var out []Event
	for i, ev := range evs {
		if ev.Type == EventToolResult && (*tools)[ev.CallID] && ev.Attempt == 0 {
			if out == nil {
				out = slices.Clone(evs)
			}
			out[i].Attempt = 2
		}
	}
	if out == nil {
		return evs
	}
	return out
}
