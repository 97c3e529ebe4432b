package memory

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/swarmrt/swarm/store"
)

var _ store.Deleter = (*Store)(nil)

// DeleteRun implements store.Deleter.
func (s *Store) DeleteRun(ctx context.Context, id string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.deleteMu.Lock()
	defer s.deleteMu.Unlock()
	return s.deleteTree(id, s.tree())
}

// DeleteFinished implements store.Deleter.
func (s *Store) DeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if s.closed.Load() {
		return 0, ErrClosed
	}
	s.deleteMu.Lock()
	defer s.deleteMu.Unlock()
	tree := s.tree()
	var old []store.Run
	for _, r := range tree[""] {
		if r.State.Terminal() && r.UpdatedAt.Before(before) {
			old = append(old, r)
		}
	}
	deleted, trees := 0, 0
	for _, r := range old {
		if trees == max(limit, 1) {
			break
		}
		n, err := s.deleteTree(r.ID, tree)
		if errors.Is(err, store.ErrInvalidState) {
			continue // a run of the tree is not finished
		}
		if err != nil {
			return deleted, err
		}
		deleted += n
		trees++
	}
	return deleted, nil
}

// tree returns every run's row by parent id ("" for top-level runs),
// oldest first.
func (s *Store) tree() map[string][]store.Run {
	type row struct {
		order uint64
		row   store.Run
	}
	var all []row
	for _, r := range s.all() {
		r.mu.Lock()
		all = append(all, row{r.order, r.row})
		r.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b row) int { return cmp.Compare(a.order, b.order) })
	out := map[string][]store.Run{}
	for _, r := range all {
		out[r.row.Parent] = append(out[r.row.Parent], r.row)
	}
	return out
}

// deleteTree deletes run id and the runs below it, found in tree (see
// Store.tree), if store.CheckDelete allows. The caller holds s.deleteMu. A
// finished run never changes state again, so its check stays true until
// it is gone.
func (s *Store) deleteTree(id string, tree map[string][]store.Run) (int, error) {
	var runs []store.Run
	r, err := s.lookup(id)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	runs = append(runs, r.row)
	r.mu.Unlock()
	for i := 0; i < len(runs); i++ {
		runs = append(runs, tree[runs[i].ID]...)
	}
	if err := store.CheckDelete(id, runs); err != nil {
		return 0, err
	}
	for _, r := range runs {
		sh := s.shard(r.ID)
		sh.mu.Lock()
		delete(sh.runs, r.ID)
		sh.mu.Unlock()
		s.teamsMu.Lock()
		delete(s.teams, r.ID)
		s.teamsMu.Unlock()
		s.dropBlobRefs(r.ID)
	}
	return len(runs), nil
}
