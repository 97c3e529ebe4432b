package swarm

import (
	"context"
	"encoding/json"
	"fmt"
)

// The snapshot primitives of a Driver (see snapshot.go): a strategy whose
// runs live long checkpoints its state at its boundaries, and a recovery
// reads the newest checkpoint and the journal after it instead of the
// whole journal.

// SnapshotKind is implemented by a [Strategy] that names its checkpoints:
// a checkpoint of another kind (the definition's strategy changed) is
// ignored, and the journal replayed from its start. Without it the kind is
// the strategy's Go type.
type SnapshotKind interface {
	SnapshotKind() string
}

// seamKind names the checkpoints of strategy s.
func seamKind(s Strategy) string {
	if k, ok := s.(SnapshotKind); ok {
		return k.SnapshotKind()
	}
	return fmt.Sprintf("%T", s)
}

// CheckpointEvery is implemented by a [Strategy] whose runs are driven
// again and again, each drive replaying the journal from the newest
// checkpoint: a conversation is driven once per user message, so with a
// checkpoint only every Config.SnapshotEvery records each message would
// replay all those since the last one, and a long conversation's messages
// would cost more and more until it. Checkpoint is then due once
// CheckpointEvery() records (at least one) were added since the newest
// snapshot. Config.SnapshotEvery still bounds it from above, and a
// negative one still means no snapshots.
type CheckpointEvery interface {
	CheckpointEvery() int
}

// Checkpoint snapshots the run at a boundary of its strategy: the record
// under key ends the boundary, and state (JSON-encoded) is what the
// strategy needs to go on from there. It must be all of it: a recovery
// from the checkpoint loads only the journal after key (RecordedEvent and
// Journaled see no earlier record) and Restore returns state. key must be
// in the journal as loaded (a boundary this drive reached is checkpointed
// by a later one). Checkpoint does nothing until Config.SnapshotEvery
// records (see CheckpointEvery) were added since the newest snapshot, or
// when the store keeps no snapshots; a failure is logged and costs only a
// longer replay.
func (d *Driver) Checkpoint(ctx context.Context, key string, state any) {
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

// Restore decodes into v the state of the checkpoint this drive continues
// from, and reports whether there is one (false: Drive starts from its
// first step, with the whole journal loaded).
func (d *Driver) Restore(v any) (bool, error) {
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
			return false, &storeError{err}
		}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, &storeError{fmt.Errorf("snapshot of run %s: %w", r.id, err)}
	}
	return true, nil
}
