package sqlite

import (
	"context"
	"strconv"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Deleter = (*Store)(nil)

// deletion is the SQLite store's deletion statements. Every delete finds
// its rows by an index: journal, inbox, mail, mailboxes and snapshots by
// rid, tasks and requests by team, the tree by runs_parent, runs to expire
// by runs_state (see TestDeletePlans).
var deletion = sqlval.NewDeletion("", func(n int) string { return "?" + strconv.Itoa(n) }, false)

// querier runs deletion's statements on the writer's connection.
func (w *writer) querier(ctx context.Context) sqlval.Querier {
	return sqlval.Querier{
		Query: func(q string, args []any, row func(scan func(dest ...any) error) error) error {
			rows, err := w.conn.QueryContext(ctx, q, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			return sqlval.EachRow(rows, row)
		},
		Exec: func(q string, args ...any) (int64, error) {
			res, err := w.conn.ExecContext(ctx, q, args...)
			if err != nil {
				return 0, err
			}
			return res.RowsAffected()
		},
	}
}

// DeleteRun implements store.Deleter.
func (s *Store) DeleteRun(ctx context.Context, id string) (n int, err error) {
	err = s.write(ctx, func(w *writer) error {
		n, err = deletion.DeleteRun(w.querier(ctx), id)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// DeleteFinished implements store.Deleter: one transaction deletes the
// batch.
func (s *Store) DeleteFinished(ctx context.Context, before time.Time, limit int) (n int, err error) {
	err = s.write(ctx, func(w *writer) error {
		n, err = deletion.DeleteFinished(w.querier(ctx), before, limit)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
