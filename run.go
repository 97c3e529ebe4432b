package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"
)

// Run is a handle on one run of a swarm whose result type is Out. It holds
// no state of its own: every method asks the runtime's store, so a handle
// made with Attach in another process sees the same run.
type Run[Out any] struct {
	rt *Runtime
	id string
}

// Start begins a run of s on in and returns its handle at once; the run
// proceeds in the background. s must be registered with rt.
func (s *Swarm[In, Out]) Start(ctx context.Context, rt *Runtime, in In, opts ...StartOption) (*Run[Out], error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("swarm %s: encode input: %w", s.id, err)
	}
	rt.mu.RLock()
	registered := rt.defs[s.id]
	rt.mu.RUnlock()
	if registered == nil {
		if err := rt.Register(s); err != nil {
			return nil, err
		}
	} else if registered != Definition(s) {
		return nil, fmt.Errorf("%w: another swarm is registered as %q", ErrDuplicate, s.id)
	}
	id, err := rt.Start(ctx, s.id, raw, opts...)
	if err != nil {
		return nil, err
	}
	return &Run[Out]{rt: rt, id: id}, nil
}

// Run starts a run and waits until it pauses or finishes.
func (s *Swarm[In, Out]) Run(ctx context.Context, rt *Runtime, in In, opts ...StartOption) (Result[Out], *Run[Out], error) {
	run, err := s.Start(ctx, rt, in, opts...)
	if err != nil {
		return nil, nil, err
	}
	res, err := run.Wait(ctx)
	return res, run, err
}

// Attach returns a handle on an existing run of s. It fails with
// ErrNotFound for an unknown id and ErrUnknownSwarm if the run belongs to
// another swarm.
func (s *Swarm[In, Out]) Attach(ctx context.Context, rt *Runtime, id string) (*Run[Out], error) {
	r, err := rt.store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", id, err)
	}
	if r.Swarm != s.id {
		return nil, fmt.Errorf("attach %s: run belongs to swarm %q, not %q: %w", id, r.Swarm, s.id, ErrUnknownSwarm)
	}
	return &Run[Out]{rt: rt, id: id}, nil
}

// ID returns the run's id.
func (r *Run[Out]) ID() string { return r.id }

// Status returns the run's untyped status.
func (r *Run[Out]) Status(ctx context.Context) (Status, error) { return r.rt.Status(ctx, r.id) }

// Result returns the run's current result without waiting. A completed
// result's parts are loaded from the store (see [Completed.Parts]).
func (r *Run[Out]) Result(ctx context.Context) (Result[Out], error) {
	s, err := r.rt.Status(ctx, r.id)
	if err != nil {
		return nil, err
	}
	return loadedResult[Out](ctx, r.rt, s)
}

// Wait blocks until the run pauses or finishes, or ctx ends, and returns its
// result.
func (r *Run[Out]) Wait(ctx context.Context) (Result[Out], error) {
	s, err := r.rt.Wait(ctx, r.id)
	if err != nil {
		return nil, err
	}
	return loadedResult[Out](ctx, r.rt, s)
}

// Resume answers a paused run; its message becomes the pause tool's result
// (for a strategy, what Await returns).
// With [AtPause] it answers that pause only (see [Runtime.Resume]).
func (r *Run[Out]) Resume(ctx context.Context, message string, opts ...ResumeOption) error {
	return r.rt.Resume(ctx, r.id, message, opts...)
}

// Stop ends the run with state stopped.
func (r *Run[Out]) Stop(ctx context.Context, reason string) error {
	return r.rt.Stop(ctx, r.id, reason)
}

// Events replays the run's events after sequence number after (0: from the
// start) and then follows new ones live until the run finishes or ctx ends.
func (r *Run[Out]) Events(ctx context.Context, after int64, opts ...EventsOption) iter.Seq2[Event, error] {
	return r.rt.Events(ctx, r.id, after, opts...)
}

// History returns the run's recorded events after sequence number after,
// without following.
func (rt *Runtime) History(ctx context.Context, id string, after int64) ([]Event, error) {
	recs, err := rt.store.Read(ctx, id, after, 0)
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", id, err)
	}
	evs := make([]Event, 0, len(recs))
	for _, rec := range recs {
		ev, err := decodeEvent(rec)
		if err != nil {
			return evs, err
		}
		ev.RunID = id
		evs = append(evs, ev)
	}
	return evs, nil
}

// Events replays run id's events after sequence number after and then
// follows new ones live until the run finishes (its completed, failed or
// stopped event has been yielded, or it lies at or before after) or ctx
// ends. Changes made by other
// processes are picked up by polling. An error ends the sequence. With
// [WithDeltas], streamed model text arrives too, as delta events with Seq 0,
// each before the model response it belongs to.
func (rt *Runtime) Events(ctx context.Context, id string, after int64, opts ...EventsOption) iter.Seq2[Event, error] {
	var ec eventsConfig
	for _, o := range opts {
		o(&ec)
	}
	return func(yield func(Event, error) bool) {
		var ds deltaQueue
		if ec.deltas {
			sub := rt.live.subscribe(id)
			defer rt.live.unsubscribe(id, sub)
			ds.ch = sub.ch
		}
		endChecked := false
		for {
			w := rt.notes.wait(id)
			recs, err := rt.store.Read(ctx, id, after, 256)
			if err != nil {
				rt.notes.done(id, w)
				yield(Event{}, fmt.Errorf("events of %s: %w", id, err))
				return
			}
			// A delta is published before its model response is
			// journaled, so every delta of a response in recs is in the
			// channel by now.
			ds.drain()
			if len(recs) > 0 {
				rt.notes.done(id, w)
				for _, rec := range recs {
					ev, err := decodeEvent(rec)
					if err != nil {
						yield(Event{}, err)
						return
					}
					ev.RunID = id
					after = rec.Seq
					if (ev.Type == EventModelResponse || ev.Type == EventModelError) && !ds.flush(yield, ev.Agent, ev.Call) {
						return
					}
					if !yield(ev, nil) {
						return
					}
					if ev.Type == EventCompleted || ev.Type == EventFailed || ev.Type == EventStopped {
						return
					}
				}
				// The rest belong to calls not journaled yet.
				if !ds.flushAll(yield) {
					return
				}
				continue
			}
			if !ds.flushAll(yield) {
				rt.notes.done(id, w)
				return
			}
			// Nothing after `after`: if the run has finished, its terminal
			// event is at or before it (a client resuming after the end),
			// and nothing will ever follow. Asked once: a run that ends
			// later writes its terminal event after `after`, which the
			// reads above yield.
			if !endChecked {
				endChecked = true
				if run, err := rt.store.Get(ctx, id); err == nil && run.State.Terminal() && run.LastSeq <= after {
					rt.notes.done(id, w)
					return
				}
			}
			t := time.NewTimer(rt.cfg.PollInterval)
			select {
			case <-w.ch:
			case <-t.C:
			case <-ctx.Done():
			case d := <-ds.ch:
				ds.pending = append(ds.pending, d)
			}
			t.Stop()
			rt.notes.done(id, w)
			if ctx.Err() != nil {
				yield(Event{}, ctx.Err())
				return
			}
		}
	}
}

// deltaQueue orders a subscriber's deltas with its journaled events: the
// deltas of a model call go out just before the call's response.
type deltaQueue struct {
	ch      chan Event
	pending []Event
}

func (q *deltaQueue) drain() {
	for {
		select {
		case d := <-q.ch:
			q.pending = append(q.pending, d)
		default:
			return
		}
	}
}

// flush yields the pending deltas of one model call.
func (q *deltaQueue) flush(yield func(Event, error) bool, agent string, call int) bool {
	keep := q.pending[:0]
	ok := true
	for _, d := range q.pending {
		if ok && d.Agent == agent && d.Call == call {
			ok = yield(d, nil)
			continue
		}
		keep = append(keep, d)
	}
	q.pending = keep
	return ok
}

func (q *deltaQueue) flushAll(yield func(Event, error) bool) bool {
	for i, d := range q.pending {
		if !yield(d, nil) {
			q.pending = q.pending[i+1:]
			return false
		}
	}
	q.pending = q.pending[:0]
	return true
}
