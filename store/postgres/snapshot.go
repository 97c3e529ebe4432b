package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Snapshots = (*Store)(nil)

// PutSnapshot implements store.Snapshots. A run's last_seq only grows, so
// checking it before the upsert, outside a transaction, is enough.
func (s *Store) PutSnapshot(ctx context.Context, id string, sn store.Snapshot) error {
	if err := s.check(); err != nil {
		return err
	}
	var rid, last int64
	err := s.pool.QueryRow(ctx, `SELECT rid, last_seq FROM swarm_runs WHERE id = $1`, id).Scan(&rid, &last)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("put snapshot: run %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return s.wrap("put snapshot of run "+id, err)
	}
	if err := store.CheckSnapshot(id, sn, last); err != nil {
		return fmt.Errorf("put snapshot: %w", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO swarm_snapshots (rid, seq, data, time) VALUES ($1, $2, $3, $4)
		ON CONFLICT (rid) DO UPDATE SET seq = excluded.seq, data = excluded.data, time = excluded.time
		WHERE excluded.seq > swarm_snapshots.seq`, rid, sn.Seq, []byte(sn.Data), sqlval.Nanos(sn.Time))
	if err != nil {
		return s.wrap("put snapshot of run "+id, err)
	}
	return nil
}

// Snapshot implements store.Snapshots.
func (s *Store) Snapshot(ctx context.Context, id string) (store.Snapshot, error) {
	if err := s.check(); err != nil {
		return store.Snapshot{}, err
	}
	return again(ctx, func() (store.Snapshot, error) {
		var sn store.Snapshot
		var seq, at *int64
		var data []byte
		err := s.pool.QueryRow(ctx, `SELECT s.seq, s.data, s.time FROM swarm_runs r
			LEFT JOIN swarm_snapshots s ON s.rid = r.rid WHERE r.id = $1`, id).Scan(&seq, &data, &at)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return sn, fmt.Errorf("snapshot of run %q: %w", id, store.ErrNotFound)
		case err != nil:
			return sn, s.wrap("snapshot of run "+id, err)
		case seq == nil:
			return sn, fmt.Errorf("run %q: %w", id, store.ErrNoSnapshot)
		}
		sn.Seq, sn.Data, sn.Time = *seq, data, sqlval.FromNanos(*at)
		return sn, nil
	})
}
