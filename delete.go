package swarm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swarmrt/swarm/store"
)

// expireBatch is how many top-level runs Expire deletes per transaction.
const expireBatch = 100

// deleter returns the runtime's store as a store.Deleter, or an error
// wrapping errors.ErrUnsupported.
func (rt *Runtime) deleter(op string) (store.Deleter, error) {
	d, ok := rt.store.(store.Deleter)
	if !ok {
		return nil, fmt.Errorf("%s: the store (%T) cannot delete runs: %w", op, rt.store, errors.ErrUnsupported)
	}
	return d, nil
}

// Delete deletes finished run id with every run below it (children,
// teammates) and all the store keeps for them: journals, messages, mail,
// snapshots, a team's task board and requests, the budget pool. It returns
// the number of runs deleted. A run that is running or paused, or that has
// such a run below it, is refused with ErrInvalidState (stop it first); a
// child run is deleted only with its top-level run (ErrInvalidState); an
// unknown id gives ErrNotFound; a store that cannot delete runs
// errors.ErrUnsupported. Nothing is deleted unless all of it is.
func (rt *Runtime) Delete(ctx context.Context, id string) (int, error) {
	d, err := rt.deleter("delete run " + id)
	if err != nil {
		return 0, err
	}
	n, err := d.DeleteRun(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("delete run %s: %w", id, err)
	}
	return n, nil
}

// Expire deletes, as Delete would, every finished top-level run last
// updated more than olderThan ago, a batch at a time, and returns the
// number of runs deleted (runs below them included). A tree with a run
// that is not finished is left. When ctx ends, the batches deleted stay
// deleted.
func (rt *Runtime) Expire(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("expire runs older than %v: the age must not be negative", olderThan)
	}
	d, err := rt.deleter("expire runs")
	if err != nil {
		return 0, err
	}
	before := time.Now().Add(-olderThan)
	total := 0
	for {
		n, err := d.DeleteFinished(ctx, before, expireBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("expire runs older than %v: %w", olderThan, err)
		}
		if n == 0 {
			return total, nil
		}
	}
}
