package strategytest

import (
	"context"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

// full is what the built-in stores implement, and so what a dying store
// passes on: the runtime finds teams, mail, snapshots and notifications by
// asking its store for these interfaces.
type full interface {
	store.Store
	store.Snapshots
	store.Mailboxes
	store.Teams
	store.Watcher
}

// wrap returns d as a store with every optional interface of its base
// (the built-in stores have them all): each write fails once d is dead,
// as it would in a dead process; reads go on (nothing reads for a dead
// process but the kit).
func (d *dying) wrap(t *testing.T) store.Store {
	t.Helper()
	f, ok := d.Store.(full)
	if !ok {
		t.Fatalf("strategytest: the store %T lacks snapshots, mailboxes, teams or notifications", d.Store)
	}
	return &dyingStore{d: d, full: f}
}

type dyingStore struct {
	full
	d *dying
}

func (s *dyingStore) check() error {
	if s.d.dead() {
		return errKilled
	}
	return nil
}

func (s *dyingStore) Create(ctx context.Context, r store.Run, owner string, lease time.Duration, records []store.Record) (store.Lease, error) {
	if err := s.check(); err != nil {
		return store.Lease{}, err
	}
	return s.full.Create(ctx, r, owner, lease, records)
}

func (s *dyingStore) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	n, err := s.full.Append(ctx, l, recs, u)
	if err == nil {
		s.d.appends.Add(1)
	}
	return n, err
}

func (s *dyingStore) Claim(ctx context.Context, id, owner string, lease time.Duration) (store.Lease, error) {
	if err := s.check(); err != nil {
		return store.Lease{}, err
	}
	return s.full.Claim(ctx, id, owner, lease)
}

func (s *dyingStore) ClaimExpired(ctx context.Context, owner string, lease time.Duration, limit int) ([]store.Lease, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.full.ClaimExpired(ctx, owner, lease, limit)
}

func (s *dyingStore) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if err := s.check(); err != nil {
		return store.Renewal{}, err
	}
	return s.full.Renew(ctx, owner, lease)
}

func (s *dyingStore) Release(ctx context.Context, l store.Lease) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.full.Release(ctx, l)
}

func (s *dyingStore) Send(ctx context.Context, id string, m store.Message) (store.Message, error) {
	if err := s.check(); err != nil {
		return store.Message{}, err
	}
	return s.full.Send(ctx, id, m)
}

func (s *dyingStore) Spend(ctx context.Context, id string, p store.Pool) (store.Pool, error) {
	if err := s.check(); err != nil {
		return store.Pool{}, err
	}
	return s.full.Spend(ctx, id, p)
}

func (s *dyingStore) PutSnapshot(ctx context.Context, id string, snap store.Snapshot) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.full.PutSnapshot(ctx, id, snap)
}

func (s *dyingStore) Post(ctx context.Context, to []string, m store.Mail) ([]store.Mail, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.full.Post(ctx, to, m)
}

func (s *dyingStore) AddTask(ctx context.Context, team string, t store.Task) (store.Task, error) {
	if err := s.check(); err != nil {
		return store.Task{}, err
	}
	return s.full.AddTask(ctx, team, t)
}

func (s *dyingStore) ClaimTask(ctx context.Context, team string, id int64, member, ownerRun string) (store.Task, error) {
	if err := s.check(); err != nil {
		return store.Task{}, err
	}
	return s.full.ClaimTask(ctx, team, id, member, ownerRun)
}

func (s *dyingStore) CompleteTask(ctx context.Context, team string, id int64, ownerRun, result string) (store.Task, error) {
	if err := s.check(); err != nil {
		return store.Task{}, err
	}
	return s.full.CompleteTask(ctx, team, id, ownerRun, result)
}

func (s *dyingStore) ReleaseTasks(ctx context.Context, team, ownerRun string) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	return s.full.ReleaseTasks(ctx, team, ownerRun)
}

func (s *dyingStore) AddRequest(ctx context.Context, team string, r store.Request) (store.Request, error) {
	if err := s.check(); err != nil {
		return store.Request{}, err
	}
	return s.full.AddRequest(ctx, team, r)
}

func (s *dyingStore) ResolveRequest(ctx context.Context, team, id string, state store.RequestState, response string) (store.Request, error) {
	if err := s.check(); err != nil {
		return store.Request{}, err
	}
	return s.full.ResolveRequest(ctx, team, id, state, response)
}

// Close leaves the base store open: the next process uses it.
func (s *dyingStore) Close() error { return nil }
