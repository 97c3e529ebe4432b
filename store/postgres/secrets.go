package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Secrets = (*Store)(nil)

// PutSecret implements store.Secrets.
func (s *Store) PutSecret(ctx context.Context, name string, value []byte) error {
	if err := s.check(); err != nil {
		return err
	}
	if len(value) > store.MaxSecretBytes {
		return fmt.Errorf("put secret %q: %d bytes: %w", name, len(value), store.ErrTooLarge)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO swarm_secrets (name, value, time) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value, time = excluded.time`, name, value, sqlval.Nanos(time.Now()))
	if err != nil {
		return s.wrap("put secret "+name, err)
	}
	return nil
}

// Secret implements store.Secrets.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM swarm_secrets WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("secret %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.wrap("secret "+name, err)
	}
	return v, nil
}

// DeleteSecret implements store.Secrets.
func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	if err := s.check(); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM swarm_secrets WHERE name = $1`, name); err != nil {
		return s.wrap("delete secret "+name, err)
	}
	return nil
}
