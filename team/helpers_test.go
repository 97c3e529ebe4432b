package team_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
)

// errKilled is what a killed process's store says to every write.
var errKilled = errors.New("process killed")

// killable is a node's store that can die: once killed, every write fails,
// as it does for a process that was killed or cut off. It keeps the
// wrapped store's Watcher, Mailboxes and Teams.
type killable struct {
	fullStore
	dead atomic.Bool
}

// fullStore is a store with every optional interface: memory, SQLite and
// PostgreSQL stores are.
type fullStore interface {
	store.Store
	store.Watcher
	store.Mailboxes
	store.Teams
	store.Blobs
}

func (k *killable) err() error {
	if k.dead.Load() {
		return errKilled
	}
	return nil
}

func (k *killable) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	if err := k.err(); err != nil {
		return 0, err
	}
	return k.fullStore.Append(ctx, l, recs, u)
}

func (k *killable) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if err := k.err(); err != nil {
		return store.Renewal{}, err
	}
	return k.fullStore.Renew(ctx, owner, lease)
}

func (k *killable) Release(ctx context.Context, l store.Lease) error {
	if err := k.err(); err != nil {
		return err
	}
	return k.fullStore.Release(ctx, l)
}

func (k *killable) ClaimExpired(ctx context.Context, owner string, lease time.Duration, limit int) ([]store.Lease, error) {
	if err := k.err(); err != nil {
		return nil, err
	}
	return k.fullStore.ClaimExpired(ctx, owner, lease, limit)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recorder is a model that keeps the requests it answers.
type recorder struct {
	m    *scripted.Model
	mu   sync.Mutex
	reqs []model.Request
}

func (r *recorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, *req)
	r.mu.Unlock()
	return r.m.Generate(ctx, req)
}

// last is agent's newest request.
func (r *recorder) last(agent string) model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.reqs) - 1; i >= 0; i-- {
		if r.reqs[i].Agent == agent {
			return r.reqs[i]
		}
	}
	return model.Request{}
}
