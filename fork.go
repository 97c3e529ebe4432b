package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/swarmrt/swarm/fork"
	"github.com/swarmrt/swarm/store"
)

// Fork starts a new run of the swarm of run id that reuses the origin's
// journal up to the step at (a step key of the origin's journal, as in
// its events) and executes everything from that step on: the recorded
// steps before it are copied into the new run's journal and replayed, not
// executed again (no model call, tool or child run is repeated), as a
// recovery replays them. This is re-running from a step (with the origin's
// input and values) or, with [fork.Input] and [fork.Values], forking with
// an edited input, or with [fork.Edits], with edited step outcomes.
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
// (ErrUnknownSwarm), a step key not in its journal, an invalid input or
// edit (ErrInvalidInput): nothing is created then.
func (rt *Runtime) Fork(ctx context.Context, id, at string, opts ...fork.Option) (string, error) {
	fc := fork.Collect(opts...)
	origin, err := rt.store.Get(ctx, id)
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	info, err := rt.info(origin.Swarm)
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	if on, err := rt.onEngine(ctx, origin); err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	} else if on {
		return "", fmt.Errorf("fork %s: %w: forking a run of the engine set in Config.Engine is not supported", id, ErrInvalidState)
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
	edited, last, err := findEdits(recs, fc.Edits)
	if err != nil {
		return "", fmt.Errorf("%w: fork %s: %w", ErrInvalidInput, id, err)
	}
	if at == "" && len(edited) > 0 {
		at = recs[last].Key
	}
	cut, forkAt := 1, ""
	if at != "" && at != recs[0].Key {
		i := slices.IndexFunc(recs, func(rec store.Record) bool { return rec.Key == at })
		if i < 0 {
			return "", fmt.Errorf("%w: fork %s: no step %q in its journal", ErrInvalidInput, id, at)
		}
		lo, hi := appendOf(recs, i)
		cut = max(lo, 1)
		if cut > 1 {
			forkAt = recs[cut].Key
		}
		for j := range edited {
			if j >= lo && j <= hi {
				// An edit at the fork point: the step is kept, edited,
				// and the fork runs what follows it.
				cut, forkAt = hi+1, at
			}
		}
		for j := range edited {
			if j >= cut {
				return "", fmt.Errorf("%w: fork %s: the edit of %s is after the fork point %s (fork at it, or at a later step)", ErrInvalidInput, id, recs[j].Key, at)
			}
		}
	}
	if len(edited) > 0 && cut == 1 {
		return "", fmt.Errorf("%w: fork %s: edits need a fork point at or after them (a re-run from the start reuses nothing to edit)", ErrInvalidInput, id)
	}
	input, values := start.Input, start.Values
	if fc.Input != nil {
		if !json.Valid(fc.Input) {
			return "", fmt.Errorf("%w: fork %s: input is not valid JSON", ErrInvalidInput, id)
		}
		input = fc.Input
	}
	if fc.SetValues {
		values = fc.Values
	}
	plan, err := rt.buildPlan(info, input, values, start.Params, start.Customization)
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	forkID := fc.ID
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
	ev.ForkOf, ev.ForkAt, ev.Reused = id, forkAt, len(reused)
	ev.Instance = newInstance()
	ev.Deadline = time.Time{}
	ev.Budget = rt.treeBudget(ev.Budget, false) // an origin started before the runtime's limits gets them
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
	for i, rec := range reused {
		rec.Seq = 0
		if out, ok := edited[i+1]; ok {
			if rec.Data, err = editRecord(rec, out); err != nil {
				return "", fmt.Errorf("fork %s: %w", id, err)
			}
		}
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
	row := store.Run{ID: forkID, Swarm: info.id, MaxTurns: plan.root.maxTurns, Agent: info.id, Blobs: rt.sharedBlobs(records)}
	lease, err := rt.store.Create(ctx, row, rt.owner, rt.cfg.Lease, records)
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

// appendOf returns the first and last index of the records of recs that
// were journaled in the same append as recs[i] (they share its time), so
// that a fork never holds half of a step.
func appendOf(recs []store.Record, i int) (lo, hi int) {
	lo, hi = i, i
	for lo > 0 && recs[lo-1].Time.Equal(recs[i].Time) {
		lo--
	}
	for hi+1 < len(recs) && recs[hi+1].Time.Equal(recs[i].Time) {
		hi++
	}
	return lo, hi
}

// findEdits checks edits against the origin's journal recs and returns
// the new output of each edited record by its index, and the greatest of
// those indexes.
func findEdits(recs []store.Record, edits []fork.Edit) (map[int]string, int, error) {
	edited, last := make(map[int]string, len(edits)), 0
	for _, e := range edits {
		i := slices.IndexFunc(recs, func(rec store.Record) bool { return rec.Key == e.Key })
		if i < 0 {
			return nil, 0, fmt.Errorf("edit: no step %q in its journal", e.Key)
		}
		if _, dup := edited[i]; dup {
			return nil, 0, fmt.Errorf("edit: step %s is edited twice", e.Key)
		}
		switch EventType(recs[i].Type) {
		case EventToolResult, EventHandoffReturned, EventModelResponse, EventResumed:
		default:
			return nil, 0, fmt.Errorf("edit: step %s is a %s record, which cannot be edited: only a tool_result, handoff_returned, model_response or resumed record can be edited", e.Key, recs[i].Type)
		}
		// What the same append recorded after the edited record must not
		// carry on what the edit replaces (a sub-agent's answer returned
		// to its caller, the end of the run): edit that instead.
		_, hi := appendOf(recs, i)
		for _, after := range recs[i+1 : hi+1] {
			switch EventType(after.Type) {
			case EventToolCall, EventHandoffStarted, EventGuardrail, EventTurnCompleted:
			default:
				return nil, 0, fmt.Errorf("edit: step %s was recorded together with %s (%s), which would keep what the edit replaces", e.Key, after.Key, after.Type)
			}
		}
		edited[i] = e.Output
		last = max(last, i)
	}
	return edited, last, nil
}

// editRecord returns the data of rec (a record findEdits accepted) with
// its output replaced by out and marked edited.
func editRecord(rec store.Record, out string) (json.RawMessage, error) {
	ev, err := decodeEvent(rec)
	if err != nil {
		return nil, err
	}
	switch EventType(rec.Type) {
	case EventModelResponse:
		ev.Text = out
	case EventResumed:
		ev.Message = out
	default:
		ev.Output, ev.IsError = out, false
	}
	ev.Edited = true
	ev.Seq, ev.Type, ev.Key, ev.Time = 0, "", "", time.Time{}
	data, err := json.Marshal(&ev)
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", rec.Key, err)
	}
	return data, nil
}
