package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// sweepEvery is how often, at most, ClaimExpired looks for owners' rows
// of swarm_leases to delete (sweepLeases).
const sweepEvery = 5 * time.Second

// Owners whose lease ran out and that hold no running run: their rows are
// deleted, so that the claim poll no longer reads the (dead) entries of the
// runs they ran. Each owner's row is deleted under the exclusive advisory
// lock on the owner (see ensureOwner), taken without waiting: an owner
// that is being given a run right now is left for another sweep.
var (
	lapsedOwnersSQL = fmt.Sprintf(`SELECT owner FROM (SELECT owner FROM swarm_leases
		WHERE until <= `+nowNS+` AND owner <> $1 OFFSET 0) o
		WHERE pg_try_advisory_xact_lock(%d, %s)`, ownerLock, ownerKey("o.owner"))
	// Run after the locks are taken, so that its snapshot sees every run
	// given to these owners before.
	deleteOwnersSQL = `DELETE FROM swarm_leases l WHERE owner = ANY($1::text[]) AND until <= ` + nowNS + `
		AND NOT EXISTS (SELECT 1 FROM swarm_runs r WHERE r.owner = l.owner AND r.owner <> '' AND r.state = 'running')`
)

// maybeSweep runs sweepLeases if the last sweep of this store is at least
// sweepEvery ago. owner is the caller's own, which is not swept.
func (s *Store) maybeSweep(ctx context.Context, owner string) {
	now := time.Now().UnixNano()
	last := s.lastSweep.Load()
	if now-last < int64(sweepEvery) || !s.lastSweep.CompareAndSwap(last, now) {
		return
	}
	if _, err := s.sweepLeases(ctx, owner); err != nil {
		s.log.Warn("postgres store: sweep of owners' leases failed", "db", s.target, "err", err)
	}
}

// sweepLeases deletes the rows of swarm_leases of the owners other than
// owner whose lease ran out and that hold no running run, and returns how
// many it deleted.
func (s *Store) sweepLeases(ctx context.Context, owner string) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, lapsedOwnersSQL, owner)
		if err != nil {
			return err
		}
		owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(owners) == 0 {
			return err
		}
		tag, err := tx.Exec(ctx, deleteOwnersSQL, owners)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, s.wrap("sweep owners' leases", err)
	}
	return n, nil
}
