package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Snapshots = (*Store)(nil)

// snapshotSchema is schema version 6: each run's newest snapshot, by the
// run's rid.
var snapshotSchema = []string{
	`CREATE TABLE snapshots (
		rid  INTEGER PRIMARY KEY,
		seq  INTEGER NOT NULL,
		data BLOB NOT NULL,
		time INTEGER NOT NULL
	)`,
}

// PutSnapshot implements store.Snapshots.
func (s *Store) PutSnapshot(ctx context.Context, id string, sn store.Snapshot) error {
	err := s.write(ctx, func(w *writer) error {
		var rid, last int64
		err := w.conn.QueryRowContext(ctx, `SELECT rid, last_seq FROM runs WHERE id = ?`, id).Scan(&rid, &last)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %q: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := store.CheckSnapshot(id, sn, last); err != nil {
			return err
		}
		_, err = w.conn.ExecContext(ctx, `INSERT INTO snapshots (rid, seq, data, time) VALUES (?, ?, ?, ?)
			ON CONFLICT (rid) DO UPDATE SET seq = excluded.seq, data = excluded.data, time = excluded.time
			WHERE excluded.seq > snapshots.seq`, rid, sn.Seq, []byte(sn.Data), sqlval.Nanos(sn.Time))
		return err
	})
	if err != nil {
		return fmt.Errorf("put snapshot: %w", err)
	}
	return nil
}

// Snapshot implements store.Snapshots.
func (s *Store) Snapshot(ctx context.Context, id string) (store.Snapshot, error) {
	if err := s.checkOpen(); err != nil {
		return store.Snapshot{}, err
	}
	var sn store.Snapshot
	var seq sql.NullInt64
	var data []byte
	var at sql.NullInt64
	err := s.rdb.QueryRowContext(ctx, `SELECT s.seq, s.data, s.time FROM runs r LEFT JOIN snapshots s ON s.rid = r.rid
		WHERE r.id = ?`, id).Scan(&seq, &data, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return sn, fmt.Errorf("snapshot of run %q: %w", id, store.ErrNotFound)
	case err != nil:
		return sn, fmt.Errorf("snapshot of run %q: %w", id, err)
	case !seq.Valid:
		return sn, fmt.Errorf("run %q: %w", id, store.ErrNoSnapshot)
	}
	sn.Seq, sn.Data, sn.Time = seq.Int64, data, sqlval.FromNanos(at.Int64)
	return sn, nil
}
