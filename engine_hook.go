package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// errOnEngine refuses to drive here a run that the engine of
// Config.Engine runs. It wraps ErrInvalidState, which the runtime's own
// callers of Drive (a resume's wake, a parent adopting its child) take
// as "someone else drives it".
var errOnEngine = fmt.Errorf("%w: the run belongs to the engine set in Config.Engine, which drives it", ErrInvalidState)

// pausedForGood reports whether r is a run of another engine that waits
// at a pause: a running row held for good with its question as reason
// (seam.HeldWaiting, the contract with the engines of Config.Engine).
func pausedForGood(r store.Run) bool { return seam.HeldWaiting(r) }

// maxTreeDepth bounds the walk from a run up to its tree's root (runs
// nest at most Config.MaxDepth deep; this is a guard against a cycle of
// parents in a damaged store).
const maxTreeDepth = 64

// onEngine reports whether run belongs to the engine of Config.Engine:
// whether the engine runs the swarm of its tree's root run. A run whose
// parent is gone (deleted) is judged by the oldest ancestor left.
func (rt *Runtime) onEngine(ctx context.Context, run store.Run) (bool, error) {
	e := rt.cfg.Engine
	if e == nil {
		return false, nil
	}
	for i := 0; run.Parent != "" && i < maxTreeDepth; i++ {
		p, err := rt.store.Get(ctx, run.Parent)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return false, err
		}
		run = p
	}
	return e.Runs(run.Swarm), nil
}

// engineOf returns the engine of Config.Engine and run id's row when the
// engine runs it, and a nil engine otherwise (also for an unknown run,
// which the caller's own path reports).
func (rt *Runtime) engineOf(ctx context.Context, id string) (seam.Engine, store.Run, error) {
	e := rt.cfg.Engine
	if e == nil {
		return nil, store.Run{}, nil
	}
	run, err := rt.store.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.Run{}, nil
	}
	if err != nil {
		return nil, run, err
	}
	on, err := rt.onEngine(ctx, run)
	if err != nil || !on {
		return nil, run, err
	}
	return e, run, nil
}

// startOnEngine is Start for a swarm whose runs the engine runs: the input
// has been checked as for any run (its plan is built, so a bad input or
// definition creates nothing), then the engine starts the run and Start
// waits until its row is in the store, so that Status, Wait and Events
// find it when Start returns. Options the engine cannot carry are refused
// rather than dropped.
func (rt *Runtime) startOnEngine(ctx context.Context, e seam.Engine, info *defInfo, id string, input json.RawMessage, sc startConfig) (string, error) {
	if len(input) == 0 {
		input = json.RawMessage(`null`)
	}
	if !json.Valid(input) {
		return "", fmt.Errorf("%w: swarm %s: input is not valid JSON", ErrInvalidInput, info.id)
	}
	var unsupported []string
	if len(sc.values) > 0 {
		unsupported = append(unsupported, "values")
	}
	if sc.params != nil {
		unsupported = append(unsupported, "params")
	}
	if sc.budget != nil {
		unsupported = append(unsupported, "a budget")
	}
	if len(sc.parts) > 0 {
		unsupported = append(unsupported, "parts")
	}
	if len(unsupported) > 0 {
		return "", fmt.Errorf("%w: swarm %s runs on another engine (Config.Engine), which takes a run's input only: %v given", ErrInvalidInput, info.id, unsupported)
	}
	if _, err := rt.buildPlan(info, input, nil, nil, nil); err != nil {
		return "", err
	}
	rt.mu.RLock()
	closed := rt.closed
	rt.mu.RUnlock()
	if closed {
		return "", ErrClosed
	}
	if sc.id != "" {
		// A start with an explicit id is idempotent, as on this runtime's
		// own engine.
		if existing, err := rt.store.Get(ctx, id); err == nil {
			if existing.Swarm != info.id {
				return "", fmt.Errorf("run %s exists and belongs to swarm %s: %w", id, existing.Swarm, store.ErrExists)
			}
			if sc.created != nil {
				*sc.created = false
			}
			return id, nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("start %s: %w", info.id, err)
		}
	}
	if err := e.Start(ctx, info.id, id, input); err != nil {
		if existing, gerr := rt.store.Get(ctx, id); gerr == nil && sc.id != "" && existing.Swarm == info.id {
			// Another start with this id came first.
			if sc.created != nil {
				*sc.created = false
			}
			return id, nil
		}
		return "", fmt.Errorf("start %s: %w", info.id, err)
	}
	if err := rt.awaitRow(ctx, id); err != nil {
		return "", fmt.Errorf("start %s: run %s was started on the engine, but its row is not in the store: %w", info.id, id, err)
	}
	if sc.created != nil {
		*sc.created = true
	}
	return id, nil
}

// awaitRow waits until run id's row is in the store, or ctx ends.
func (rt *Runtime) awaitRow(ctx context.Context, id string) error {
	for {
		w := rt.notes.wait(id)
		_, err := rt.store.Get(ctx, id)
		if !errors.Is(err, store.ErrNotFound) {
			rt.notes.done(id, w)
			return err
		}
		if err := rt.nap(ctx, id, w); err != nil {
			return err
		}
	}
}

// resumeOnEngine is Resume for a run the engine runs: the run must be
// paused (at pause, when not 0), as on this runtime's own engine. Once
// the engine has the answer, it waits (up to Config.Lease, or until ctx
// ends) for the answer in the run's journal.
func (rt *Runtime) resumeOnEngine(ctx context.Context, e seam.Engine, run store.Run, message string, pause int64, parts []model.Part) error {
	if len(parts) > 0 {
		return fmt.Errorf("resume %s: %w: the run is on another engine (Config.Engine), which takes a message's text only", run.ID, ErrInvalidInput)
	}
	if run.State != store.Paused && !pausedForGood(run) {
		if pause != 0 {
			return fmt.Errorf("resume %s: %w", run.ID, ErrPauseNotCurrent)
		}
		return fmt.Errorf("resume %s: the run is %s, not paused: %w", run.ID, run.State, ErrInvalidState)
	}
	if pause != 0 && pause != run.LastSeq {
		return fmt.Errorf("resume %s: %w", run.ID, ErrPauseNotCurrent)
	}
	if err := e.Resume(ctx, run.ID, message); err != nil {
		return fmt.Errorf("resume %s: %w", run.ID, err)
	}
	// A Wait after Resume sees the run past this pause.
	rt.awaitEngine(ctx, run.ID, func(r store.Run) bool { return r.LastSeq > run.LastSeq || r.State.Terminal() })
	return nil
}

// stopOnEngine is Stop for a run the engine runs: a finished run cannot
// be stopped, as on this runtime's own engine. Once the engine has the
// stop, it waits (up to Config.Lease, or until ctx ends) for the run's
// end in the store, so that a Wait after Stop sees the stopped run, as it
// does when this runtime stops a paused run itself; the stop holds
// either way.
func (rt *Runtime) stopOnEngine(ctx context.Context, e seam.Engine, run store.Run, reason string) error {
	if run.State.Terminal() {
		return fmt.Errorf("stop %s: the run is %s: %w", run.ID, run.State, ErrInvalidState)
	}
	if err := e.Stop(ctx, run.ID, reason); err != nil {
		return fmt.Errorf("stop %s: %w", run.ID, err)
	}
	rt.awaitEngine(ctx, run.ID, func(r store.Run) bool { return r.State.Terminal() })
	return nil
}

// awaitEngine waits until run id's row satisfies done (or is gone), for at
// most Config.Lease or until ctx ends: the engine of Config.Engine has
// taken a command for the run, and journals its effect in the store soon
// after.
func (rt *Runtime) awaitEngine(ctx context.Context, id string, done func(store.Run) bool) {
	wctx, cancel := context.WithTimeout(ctx, rt.cfg.Lease)
	defer cancel()
	for {
		w := rt.notes.wait(id)
		r, err := rt.store.Get(wctx, id)
		if err != nil || done(r) {
			rt.notes.done(id, w)
			return
		}
		if rt.nap(wctx, id, w) != nil {
			return
		}
	}
}
