package sqlval

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/swarmrt/swarm/store"
)

// Deletion holds the statements that delete run trees from a SQL store (see
// store.Deleter), for the store to run in one transaction.
type Deletion struct {
	// Root reads rid, id, parent and state of run param(1); Children
	// those of the runs whose parent is run param(1).
	Root, Children string
	// Finished reads rid, id, parent, created_at and updated_at of up to
	// param(3) runs in state param(1) with a rid above param(2), in rid
	// order: the (state, rid) index gives them in order, so that the
	// query stops at the limit, with or without statistics (more
	// conditions make PostgreSQL guess that few rows match, and sort
	// them all).
	Finished string
	// ByRun delete what a run keeps, by rid, param(1); ByTeam what a
	// team keeps, by the lead run's id, param(1); Run deletes the row.
	ByRun, ByTeam []string
	Run           string
	// AfterRun delete what a run keeps, by rid, param(1), once its row is
	// gone: its blob references, which a concurrent PutBlob adds only
	// while the row exists.
	AfterRun []string
}

// NewDeletion returns the deletion statements of a store whose tables are
// named prefix+"runs", prefix+"journal", and so on; param(n) writes the
// n-th placeholder; teamTables names the tables keyed by team besides
// tasks and requests.
//
// lockBlobs says that the store runs transactions concurrently (PostgreSQL):
// the blobs of a run are then locked before the check that no other run
// refers to them, so that a concurrent PutBlob of the same bytes for
// another run (which locks the blob's row) either commits its reference
// first, and the blob stays, or waits and stores the bytes anew.
func NewDeletion(prefix string, param func(n int) string, lockBlobs bool, teamTables ...string) Deletion {
	p1, p2, p3 := param(1), param(2), param(3)
	runs := prefix + "runs"
	d := Deletion{
		Root: `SELECT rid, id, parent, state FROM ` + runs + ` WHERE id = ` + p1,
		// parent <> '' is spelled out for the partial index on parent.
		Children: `SELECT rid, id, parent, state FROM ` + runs + ` WHERE parent = ` + p1 + ` AND parent <> ''`,
		Finished: `SELECT rid, id, parent, created_at, updated_at FROM ` + runs + ` WHERE state = ` + p1 +
			` AND rid > ` + p2 + ` ORDER BY rid LIMIT ` + p3,
		Run: `DELETE FROM ` + runs + ` WHERE rid = ` + p1,
	}
	for _, t := range []string{"journal", "inbox", "mail", "mailboxes", "snapshots"} {
		d.ByRun = append(d.ByRun, `DELETE FROM `+prefix+t+` WHERE rid = `+p1)
	}
	d.AfterRun = blobDeletion(prefix, p1, lockBlobs)
	for _, t := range append([]string{"tasks", "requests"}, teamTables...) {
		d.ByTeam = append(d.ByTeam, `DELETE FROM `+prefix+t+` WHERE team = `+p1)
	}
	return d
}

// blobDeletion deletes the blobs only run p1 refers to, then its
// references, each by index (blob_refs by (rid, hash) and by hash). On
// PostgreSQL (lock) the run's hashes are read first, as an array, so that
// the blobs are found by their primary key even without statistics.
func blobDeletion(prefix, p1 string, lock bool) []string {
	blobs, refs := prefix+"blobs", prefix+"blob_refs"
	mine := `hash IN (SELECT hash FROM ` + refs + ` WHERE rid = ` + p1 + `)`
	if lock {
		mine = `hash = ANY (ARRAY(SELECT hash FROM ` + refs + ` WHERE rid = ` + p1 + `))`
	}
	var out []string
	if lock {
		out = append(out, `SELECT hash FROM `+blobs+` WHERE `+mine+` ORDER BY hash FOR UPDATE`)
	}
	return append(out,
		`DELETE FROM `+blobs+` WHERE `+mine+
			` AND NOT EXISTS (SELECT 1 FROM `+refs+` o WHERE o.hash = `+blobs+`.hash AND o.rid <> `+p1+`)`,
		`DELETE FROM `+refs+` WHERE rid = `+p1)
}

// Querier is what Deletion needs of a store's transaction: Query calls
// row for each row of q, with the function that scans it; Exec runs q and
// returns the number of rows it changed.
type Querier struct {
	Query func(q string, args []any, row func(scan func(dest ...any) error) error) error
	Exec  func(q string, args ...any) (int64, error)
}

// Rows is what EachRow needs of a query's rows (*sql.Rows, pgx.Rows).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// EachRow calls row for each of rows, with the function that scans it, and
// returns the first error; the caller closes rows.
func EachRow(rows Rows, row func(scan func(dest ...any) error) error) error {
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// DeleteRun deletes the tree of run id (see store.Deleter.DeleteRun) with
// q, inside the caller's transaction.
func (d Deletion) DeleteRun(q Querier, id string) (int, error) {
	var tree []store.Run
	var rids []int64
	add := func(scan func(dest ...any) error) error {
		var rid int64
		var r store.Run
		if err := scan(&rid, &r.ID, &r.Parent, &r.State); err != nil {
			return err
		}
		tree, rids = append(tree, r), append(rids, rid)
		return nil
	}
	// The tree is read a level at a time, by index, rather than with a
	// recursive query, which PostgreSQL may plan as a scan of every run.
	if err := q.Query(d.Root, []any{id}, add); err != nil {
		return 0, fmt.Errorf("delete run %q: %w", id, err)
	}
	for i := 0; i < len(tree); i++ {
		if err := q.Query(d.Children, []any{tree[i].ID}, add); err != nil {
			return 0, fmt.Errorf("delete run %q: %w", id, err)
		}
	}
	if err := store.CheckDelete(id, tree); err != nil {
		return 0, err
	}
	deleted := 0
	for i, r := range tree {
		for _, stmt := range d.ByRun {
			if _, err := q.Exec(stmt, rids[i]); err != nil {
				return 0, fmt.Errorf("delete run %q: %w", r.ID, err)
			}
		}
		for _, stmt := range d.ByTeam {
			if _, err := q.Exec(stmt, r.ID); err != nil {
				return 0, fmt.Errorf("delete run %q: %w", r.ID, err)
			}
		}
		n, err := q.Exec(d.Run, rids[i])
		if err != nil {
			return 0, fmt.Errorf("delete run %q: %w", r.ID, err)
		}
		for _, stmt := range d.AfterRun {
			if _, err := q.Exec(stmt, rids[i]); err != nil {
				return 0, fmt.Errorf("delete run %q: %w", r.ID, err)
			}
		}
		deleted += int(n)
	}
	if deleted == 0 { // deleted meanwhile by another caller
		return 0, fmt.Errorf("delete run %q: %w", id, store.ErrNotFound)
	}
	return deleted, nil
}

// DeleteFinished deletes up to limit finished top-level runs last updated
// before before, with their trees (see store.Deleter.DeleteFinished), with
// q, inside the caller's transaction. It walks the finished runs in rid
// order, which is the order of creation, past the runs it must leave
// (children, runs updated since, trees with a run not finished) up to the
// first run created after before: no run created later can have been
// updated before.
func (d Deletion) DeleteFinished(q Querier, before time.Time, limit int) (int, error) {
	limit = max(limit, 1)
	type finished struct {
		rid              int64
		id, parent       string
		created, updated int64
	}
	cut := Nanos(before)
	deleted, trees, after := 0, 0, int64(0)
	for trees < limit {
		var found []finished
		for _, st := range []store.State{store.Completed, store.Failed, store.Stopped} {
			err := q.Query(d.Finished, []any{string(st), after, limit}, func(scan func(dest ...any) error) error {
				var f finished
				if err := scan(&f.rid, &f.id, &f.parent, &f.created, &f.updated); err != nil {
					return err
				}
				found = append(found, f)
				return nil
			})
			if err != nil {
				return 0, fmt.Errorf("expire runs: %w", err)
			}
		}
		if len(found) == 0 {
			break
		}
		// The first limit of the states' first limit each are the
		// first limit of all.
		slices.SortFunc(found, func(a, b finished) int { return cmp.Compare(a.rid, b.rid) })
		for _, f := range found[:min(len(found), limit)] {
			if f.created >= cut {
				return deleted, nil
			}
			after = f.rid
			if f.parent != "" || f.updated >= cut {
				continue
			}
			n, err := d.DeleteRun(q, f.id)
			// A tree with a run not finished further down is left; one
			// deleted meanwhile by another caller is no error.
			if errors.Is(err, store.ErrInvalidState) || errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("expire runs: %w", err)
			}
			deleted += n
			if trees++; trees == limit {
				break
			}
		}
	}
	return deleted, nil
}
