package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Secrets = (*Store)(nil)

// secretSchema is a schema upgrade of its own: named secrets, which their
// callers encrypt (store.Secrets).
var secretSchema = []string{
	`CREATE TABLE IF NOT EXISTS secrets (
		name  TEXT PRIMARY KEY,
		value BLOB NOT NULL,
		time  INTEGER NOT NULL
	)`,
}

// PutSecret implements store.Secrets.
func (s *Store) PutSecret(ctx context.Context, name string, value []byte) error {
	if len(value) > store.MaxSecretBytes {
		return fmt.Errorf("put secret %q: %d bytes: %w", name, len(value), store.ErrTooLarge)
	}
	err := s.write(ctx, func(w *writer) error {
		_, err := w.conn.ExecContext(ctx, `INSERT INTO secrets (name, value, time) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value, time = excluded.time`, name, value, sqlval.Nanos(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("put secret %q: %w", name, err)
	}
	return nil
}

// Secret implements store.Secrets.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var v []byte
	err := s.rdb.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("secret %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	return v, nil
}

// DeleteSecret implements store.Secrets.
func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	err := s.write(ctx, func(w *writer) error {
		_, err := w.conn.ExecContext(ctx, `DELETE FROM secrets WHERE name = ?`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete secret %q: %w", name, err)
	}
	return nil
}
