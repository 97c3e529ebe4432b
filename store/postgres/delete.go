package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Deleter = (*Store)(nil)

// deletion is the PostgreSQL store's deletion statements. Every delete
// finds its rows by an index: journal, inbox, mail, mailboxes and snapshots
// by rid, tasks, requests and teams by team, the tree by
// swarm_runs_parent_rid, runs to expire by swarm_runs_state_rid (see
// TestQueryPlans).
var deletion = sqlval.NewDeletion("swarm_", func(n int) string { return "$" + strconv.Itoa(n) }, true, "teams")

// querier runs deletion's statements in transaction tx.
func querier(ctx context.Context, tx pgx.Tx) sqlval.Querier {
	return sqlval.Querier{
		Query: func(q string, args []any, row func(scan func(dest ...any) error) error) error {
			rows, err := tx.Query(ctx, q, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			return sqlval.EachRow(rows, row)
		},
		Exec: func(q string, args ...any) (int64, error) {
			tag, err := tx.Exec(ctx, q, args...)
			return tag.RowsAffected(), err
		},
	}
}

// deleteTx runs fn, one of deletion's methods, in a transaction.
func (s *Store) deleteTx(ctx context.Context, op string, fn func(q sqlval.Querier) (int, error)) (n int, err error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		n, err = fn(querier(ctx, tx))
		return err
	})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidState) {
		return 0, err
	}
	if err != nil {
		return 0, s.wrap(op, err)
	}
	return n, nil
}

// DeleteRun implements store.Deleter.
func (s *Store) DeleteRun(ctx context.Context, id string) (int, error) {
	return s.deleteTx(ctx, "delete run "+id, func(q sqlval.Querier) (int, error) { return deletion.DeleteRun(q, id) })
}

// DeleteFinished implements store.Deleter: one transaction deletes the
// batch.
func (s *Store) DeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.deleteTx(ctx, "expire runs", func(q sqlval.Querier) (int, error) { return deletion.DeleteFinished(q, before, limit) })
}
