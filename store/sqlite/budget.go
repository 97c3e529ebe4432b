package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/swarmrt/swarm/store"
)

// Spend implements store.Store. The writer connection runs it in one
// statement, so concurrent spends from this process are serialized, and
// those of other processes wait for the database's write lock.
func (s *Store) Spend(ctx context.Context, id string, d store.Pool) (store.Pool, error) {
	if err := store.CheckSpend(id, d); err != nil {
		return store.Pool{}, err
	}
	var p store.Pool
	err := s.write(ctx, func(w *writer) error {
		if w.spend == nil {
			st, err := w.conn.PrepareContext(context.Background(), `UPDATE runs SET pool_calls = max(pool_calls + ?, 0), pool_tools = max(pool_tools + ?, 0),
				pool_tokens = pool_tokens + ?, pool_cost = pool_cost + ?, pool_lifted = (pool_lifted OR ?)
				WHERE id = ? RETURNING pool_calls, pool_tools, pool_tokens, pool_cost, pool_lifted`)
			if err != nil {
				return fmt.Errorf("prepare spend: %w", err)
			}
			w.spend = st
			w.all = append(w.all, st)
		}
		err := w.spend.QueryRow(d.Calls, d.Tools, d.Tokens, d.Cost, d.Lifted, id).Scan(&p.Calls, &p.Tools, &p.Tokens, &p.Cost, &p.Lifted)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %q: %w", id, store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return store.Pool{}, fmt.Errorf("spend: %w", err)
	}
	return p, nil
}
