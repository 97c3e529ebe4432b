package conversation_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

var errKilled = errors.New("process killed")

// dying is a store that stops answering after a number of appends, which
// is what a process killed right after that append looks like from the
// store's side.
type dying struct {
	store.Store
	appends atomic.Int64
	after   int64
}

func (d *dying) dead() bool { return d.after > 0 && d.appends.Load() >= d.after }

func (d *dying) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	if d.dead() {
		return 0, errKilled
	}
	n, err := d.Store.Append(ctx, l, recs, u)
	if err == nil {
		d.appends.Add(1)
	}
	return n, err
}

func (d *dying) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if d.dead() {
		return store.Renewal{}, errKilled
	}
	return d.Store.Renew(ctx, owner, lease)
}

func (d *dying) Release(ctx context.Context, l store.Lease) error {
	if d.dead() {
		return errKilled
	}
	return d.Store.Release(ctx, l)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
