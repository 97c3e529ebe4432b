package swarm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/store"
)

// StartChildren implements strategy.Driver.StartChildren.
func (d *seamDriver) StartChildren(ctx context.Context, children ...seam.Child) error {
	r := d.r
	if r.depth+1 > r.rt.cfg.MaxDepth {
		return fmt.Errorf("%w: a child run would nest deeper than the max depth (%d)", ErrInvalidInput, r.rt.cfg.MaxDepth)
	}
	var held []func()
	defer func() {
		for _, start := range held {
			start()
		}
	}()
	for _, c := range children {
		if err := checkRunID(c.ID); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidInput, err)
		}
		if err := r.checkHanded(ctx, c.Parts); err != nil {
			return fmt.Errorf("child %s: %w", c.ID, err)
		}
		values, err := json.Marshal(c.Values)
		if err != nil {
			return fmt.Errorf("%w: child %s: values: %w", ErrInvalidInput, c.ID, err)
		}
		info := r.info
		if c.Swarm != "" {
			if info, err = r.rt.info(c.Swarm); err != nil {
				return fmt.Errorf("child %s: %w", c.ID, err)
			}
		}
		if existing, err := r.rt.store.Get(ctx, c.ID); err == nil {
			same, err := r.rt.sameChild(ctx, existing, r.id, values)
			switch {
			case err != nil:
				return err
			case !same || existing.Swarm != info.id:
				return fmt.Errorf("%w: run %s exists with other values", ErrDuplicate, c.ID)
			}
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		r.spawned.Store(true)
		if _, err := r.rt.create(ctx, newRun{info: info, input: c.Input, id: c.ID, explicitID: true, values: c.Values,
			parent: r.id, depth: r.depth + 1, budget: r.budget, root: r.root, deadline: r.deadline, held: &held, parts: c.Parts}); err != nil {
			return err
		}
	}
	return nil
}

// sameChild reports whether run is a child of parent started with values
// (JSON).
func (rt *Runtime) sameChild(ctx context.Context, run store.Run, parent string, values []byte) (bool, error) {
	if run.Parent != parent {
		return false, nil
	}
	recs, err := rt.store.Read(ctx, run.ID, 0, 1)
	if err != nil {
		return false, err
	}
	if len(recs) == 0 {
		return false, fmt.Errorf("run %s has no start record", run.ID)
	}
	ev, err := decodeEvent(recs[0])
	if err != nil {
		return false, err
	}
	got, err := json.Marshal(ev.Values)
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, values), nil
}
