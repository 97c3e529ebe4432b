package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Snapshot is what a runtime knows of a run after replaying its journal up
// to and including record Seq: the state it would otherwise rebuild by
// reading every record from the first. Data is the runtime's to define.
type Snapshot struct {
	Seq  int64           `json:"seq"`
	Data json.RawMessage `json:"data"`
	Time time.Time       `json:"time"`
}

// MaxSnapshotBytes bounds a snapshot's Data.
const MaxSnapshotBytes = 64 << 20

// ErrNoSnapshot: the run has no snapshot yet.
var ErrNoSnapshot = errors.New("run has no snapshot")

// Snapshots is implemented by stores that keep a snapshot per run, so that
// recovering a run with a long journal reads its newest snapshot and the
// records after it instead of the whole journal. It is optional: without
// it every recovery replays the journal from the start.
//
// A snapshot is derived from the journal, never the other way round: the
// journal stays whole, and a store may drop snapshots at any time. Since
// the records up to Seq never change once appended, a snapshot is valid
// whoever writes it; no lease is needed.
type Snapshots interface {
	// PutSnapshot keeps s as run id's snapshot, replacing an older one; a
	// snapshot whose Seq is not newer than the kept one's is ignored. An
	// unknown run gives ErrNotFound; a Seq below 1 or past the run's
	// newest record gives ErrInvalidState, Data over MaxSnapshotBytes
	// ErrTooLarge.
	PutSnapshot(ctx context.Context, id string, s Snapshot) error
	// Snapshot returns run id's newest snapshot: ErrNoSnapshot if it has
	// none, ErrNotFound for an unknown run.
	Snapshot(ctx context.Context, id string) (Snapshot, error)
}

// CheckSnapshot validates s for run id whose newest record is lastSeq;
// stores call it before PutSnapshot changes anything.
func CheckSnapshot(id string, s Snapshot, lastSeq int64) error {
	switch {
	case s.Seq < 1 || s.Seq > lastSeq:
		return fmt.Errorf("snapshot of run %q at record %d: the journal has records 1 to %d: %w", id, s.Seq, lastSeq, ErrInvalidState)
	case len(s.Data) > MaxSnapshotBytes:
		return fmt.Errorf("snapshot of run %q: %d bytes, over the limit of %d: %w", id, len(s.Data), MaxSnapshotBytes, ErrTooLarge)
	}
	return nil
}
