package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/swarmrt/swarm/store"
)

// spendSQL changes the pool in one statement: the row lock serializes
// concurrent spends from every node.
const spendSQL = `UPDATE swarm_runs SET pool_calls = GREATEST(pool_calls + $2, 0), pool_tokens = pool_tokens + $3,
	pool_cost = pool_cost + $4, pool_lifted = pool_lifted OR $5, pool_tools = GREATEST(pool_tools + $6, 0)
	WHERE id = $1 RETURNING pool_calls, pool_tokens, pool_cost, pool_lifted, pool_tools`

// Spend implements store.Store. It is not retried on a broken connection:
// an addition that committed before the connection broke would count
// twice.
func (s *Store) Spend(ctx context.Context, id string, d store.Pool) (store.Pool, error) {
	if err := s.check(); err != nil {
		return store.Pool{}, err
	}
	if err := store.CheckSpend(id, d); err != nil {
		return store.Pool{}, err
	}
	var p store.Pool
	err := s.pool.QueryRow(ctx, spendSQL, id, d.Calls, d.Tokens, d.Cost, d.Lifted, d.Tools).Scan(&p.Calls, &p.Tokens, &p.Cost, &p.Lifted, &p.Tools)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Pool{}, fmt.Errorf("spend on run %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Pool{}, s.wrap("spend on run "+id, err)
	}
	return p, nil
}
