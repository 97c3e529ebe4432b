package swarm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/swarmrt/swarm/internal/seam"
)

// The snapshot primitives of a Driver (see snapshot.go): a strategy whose
// runs live long checkpoints its state at its boundaries, and a recovery
// reads the newest checkpoint and the journal after it instead of the
// whole journal.

// Checkpoint implements strategy.Driver.Checkpoint.
func (d *seamDriver) Checkpoint(ctx context.Context, key string, state any) {
	r := d.r
	seq, live, ok := r.boundary(key, false)
	if !ok {
		return
	}
	if _, due := r.snapDue(ctx, seq); !due {
		return // the state is not even encoded
	}
	data, err := json.Marshal(state)
	if err != nil {
		r.rt.log.Warn("snapshot not written", "run", r.id, "seq", seq, "err", err)
		return
	}
	r.checkpoint(ctx, snapKindOf(r.plan.strategy), seq, live, func(s *runSnap) { s.State = data })
}

// Restore implements strategy.Driver.Restore.
func (d *seamDriver) Restore(v any) (bool, error) {
	r := d.r
	s := r.restored(snapKindOf(r.plan.strategy))
	if s == nil {
		return false, nil
	}
	data := []byte(s.State)
	if len(data) == 0 {
		// A checkpoint of version 2 kept a team member's state at its
		// top level (next, msgs, claims).
		var err error
		if data, err = json.Marshal(s); err != nil {
			return false, &seam.Interrupted{Err: err}
		}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, &seam.Interrupted{Err: fmt.Errorf("snapshot of run %s: %w", r.id, err)}
	}
	return true, nil
}
