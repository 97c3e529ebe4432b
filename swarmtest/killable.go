package swarmtest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

// ErrKilled is what a killed process's store answers to every write.
var ErrKilled = errors.New("swarmtest: the process was killed")

// FullStore is a store with every optional interface the runtime looks
// for (snapshots, mailboxes, task boards, notifications, blobs): the
// memory, SQLite and PostgreSQL stores are.
type FullStore interface {
	store.Store
	store.Snapshots
	store.Mailboxes
	store.Teams
	store.Watcher
	store.Blobs
}

// Killable is the store of a process that can die: once dead (Kill, or
// the append DieAfter names), every write fails with ErrKilled, as it does
// for a process that was killed or cut off, while reads go on (a test
// looks at what the dead process left). Give a runtime the Killable and a
// second runtime its Base, and the second recovers what the first left:
// a crash test. Close leaves the base store open for that second runtime.
type Killable struct {
	FullStore
	dead    atomic.Bool
	appends atomic.Int64
	after   atomic.Int64
}

// NewKillable wraps base, which must be a FullStore (t fails otherwise).
func NewKillable(t testing.TB, base store.Store) *Killable {
	t.Helper()
	f, ok := base.(FullStore)
	if !ok {
		t.Fatalf("swarmtest: the store %T lacks snapshots, mailboxes, teams, notifications or blobs", base)
	}
	return &Killable{FullStore: f}
}

// Base returns the wrapped store, which lives on after the process dies.
func (k *Killable) Base() FullStore { return k.FullStore }

// Kill makes every later write fail.
func (k *Killable) Kill() { k.dead.Store(true) }

// DieAfter makes the store die right after its n-th successful append
// (never for n ≤ 0): a process killed just after that append.
func (k *Killable) DieAfter(n int64) { k.after.Store(n) }

// Dead reports whether the store has died.
func (k *Killable) Dead() bool {
	if n := k.after.Load(); n > 0 && k.appends.Load() >= n {
		k.dead.Store(true)
	}
	return k.dead.Load()
}

// Appends returns the number of successful appends.
func (k *Killable) Appends() int64 { return k.appends.Load() }

func (k *Killable) check() error {
	if k.Dead() {
		return ErrKilled
	}
	return nil
}

// Close leaves the base store open: the next process uses it.
func (k *Killable) Close() error { return nil }

// Create fails once the store is dead.
func (k *Killable) Create(ctx context.Context, r store.Run, owner string, lease time.Duration, records []store.Record) (store.Lease, error) {
	if err := k.check(); err != nil {
		return store.Lease{}, err
	}
	return k.FullStore.Create(ctx, r, owner, lease, records)
}

// Append fails once the store is dead; a successful one counts toward
// DieAfter.
func (k *Killable) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	if err := k.check(); err != nil {
		return 0, err
	}
	n, err := k.FullStore.Append(ctx, l, recs, u)
	if err == nil {
		k.appends.Add(1)
	}
	return n, err
}

// Claim fails once the store is dead.
func (k *Killable) Claim(ctx context.Context, id, owner string, lease time.Duration) (store.Lease, error) {
	if err := k.check(); err != nil {
		return store.Lease{}, err
	}
	return k.FullStore.Claim(ctx, id, owner, lease)
}

// ClaimExpired fails once the store is dead.
func (k *Killable) ClaimExpired(ctx context.Context, owner string, lease time.Duration, limit int) ([]store.Lease, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	return k.FullStore.ClaimExpired(ctx, owner, lease, limit)
}

// Renew fails once the store is dead, so the dead process's leases run
// out.
func (k *Killable) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if err := k.check(); err != nil {
		return store.Renewal{}, err
	}
	return k.FullStore.Renew(ctx, owner, lease)
}

// Release fails once the store is dead.
func (k *Killable) Release(ctx context.Context, l store.Lease) error {
	if err := k.check(); err != nil {
		return err
	}
	return k.FullStore.Release(ctx, l)
}

// Send fails once the store is dead.
func (k *Killable) Send(ctx context.Context, id string, m store.Message) (store.Message, error) {
	if err := k.check(); err != nil {
		return store.Message{}, err
	}
	return k.FullStore.Send(ctx, id, m)
}

// Spend fails once the store is dead.
func (k *Killable) Spend(ctx context.Context, id string, p store.Pool) (store.Pool, error) {
	if err := k.check(); err != nil {
		return store.Pool{}, err
	}
	return k.FullStore.Spend(ctx, id, p)
}

// PutSnapshot fails once the store is dead.
func (k *Killable) PutSnapshot(ctx context.Context, id string, snap store.Snapshot) error {
	if err := k.check(); err != nil {
		return err
	}
	return k.FullStore.PutSnapshot(ctx, id, snap)
}

// Post fails once the store is dead.
func (k *Killable) Post(ctx context.Context, to []string, m store.Mail) ([]store.Mail, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	return k.FullStore.Post(ctx, to, m)
}

// AddTask fails once the store is dead.
func (k *Killable) AddTask(ctx context.Context, team string, t store.Task) (store.Task, error) {
	if err := k.check(); err != nil {
		return store.Task{}, err
	}
	return k.FullStore.AddTask(ctx, team, t)
}

// ClaimTask fails once the store is dead.
func (k *Killable) ClaimTask(ctx context.Context, team string, id int64, member, ownerRun string) (store.Task, error) {
	if err := k.check(); err != nil {
		return store.Task{}, err
	}
	return k.FullStore.ClaimTask(ctx, team, id, member, ownerRun)
}

// CompleteTask fails once the store is dead.
func (k *Killable) CompleteTask(ctx context.Context, team string, id int64, ownerRun, result string) (store.Task, error) {
	if err := k.check(); err != nil {
		return store.Task{}, err
	}
	return k.FullStore.CompleteTask(ctx, team, id, ownerRun, result)
}

// ReleaseTasks fails once the store is dead.
func (k *Killable) ReleaseTasks(ctx context.Context, team, ownerRun string) (int, error) {
	if err := k.check(); err != nil {
		return 0, err
	}
	return k.FullStore.ReleaseTasks(ctx, team, ownerRun)
}

// AddRequest fails once the store is dead.
func (k *Killable) AddRequest(ctx context.Context, team string, r store.Request) (store.Request, error) {
	if err := k.check(); err != nil {
		return store.Request{}, err
	}
	return k.FullStore.AddRequest(ctx, team, r)
}

// ResolveRequest fails once the store is dead.
func (k *Killable) ResolveRequest(ctx context.Context, team, id string, state store.RequestState, response string) (store.Request, error) {
	if err := k.check(); err != nil {
		return store.Request{}, err
	}
	return k.FullStore.ResolveRequest(ctx, team, id, state, response)
}

// PutBlob fails once the store is dead.
func (k *Killable) PutBlob(ctx context.Context, id string, data []byte) (string, error) {
	if err := k.check(); err != nil {
		return "", err
	}
	return k.FullStore.PutBlob(ctx, id, data)
}

// RefBlob fails once the store is dead.
func (k *Killable) RefBlob(ctx context.Context, id, hash string) error {
	if err := k.check(); err != nil {
		return err
	}
	return k.FullStore.RefBlob(ctx, id, hash)
}
