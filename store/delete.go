package store

import (
	"context"
	"fmt"
	"time"
)

// Deleter is implemented by stores that can delete runs. It is optional:
// without it, runs are kept for good.
//
// Deleting a run deletes its whole tree (the run and every run below it,
// through Run.Parent) with everything the store keeps for them: journals,
// inbox messages, mailboxes and their mail, snapshots, the task boards and
// protocol requests of the teams they lead, and the tree's budget pool (on
// the root's row), in one transaction: all or nothing.
type Deleter interface {
	// DeleteRun deletes top-level run id and its tree, and returns the
	// number of runs deleted. Every run of the tree must be finished
	// (completed, failed or stopped); otherwise ErrInvalidState, naming
	// the run, and nothing is deleted. A child run is deleted only with
	// its root (ErrInvalidState); an unknown run gives ErrNotFound.
	DeleteRun(ctx context.Context, id string) (int, error)

	// DeleteFinished deletes up to limit finished top-level runs last
	// updated before before (limit <= 0: one), first created first, each
	// with its tree, and returns the number of runs deleted (descendants
	// included). A tree with a run that is not finished is left whole;
	// call again until it returns 0 to expire every run in batches.
	DeleteFinished(ctx context.Context, before time.Time, limit int) (int, error)
}

// CheckDelete reports why the tree of run id may not be deleted: tree holds
// the rows (ID, Parent and State are read) of run id, first, and of every
// run below it. Stores call it before deleting anything.
func CheckDelete(id string, tree []Run) error {
	if len(tree) == 0 {
		return fmt.Errorf("run %q: %w", id, ErrNotFound)
	}
	if p := tree[0].Parent; p != "" {
		return fmt.Errorf("run %q is a child of run %q and is deleted only with its top-level run: %w", id, p, ErrInvalidState)
	}
	for _, r := range tree {
		if r.State.Terminal() {
			continue
		}
		if r.ID == id {
			return fmt.Errorf("run %q is %s; only finished runs can be deleted (stop it first): %w", id, r.State, ErrInvalidState)
		}
		return fmt.Errorf("run %q below run %q is %s; only finished runs can be deleted (stop it first): %w", r.ID, id, r.State, ErrInvalidState)
	}
	return nil
}
