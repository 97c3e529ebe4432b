package swarm_test

import (
	"errors"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
)

// TestDeleteAndExpire: Delete removes a finished run and refuses one that
// is not finished; Expire removes the finished runs older than its age and
// leaves the others.
func TestDeleteAndExpire(t *testing.T) {
	ctx := ctxT(t)
	rt, s, _, _ := forkShop(t)
	runOne := func() string {
		t.Helper()
		_, h, err := s.Run(ctx, rt, "a lamp")
		if err != nil {
			t.Fatal(err)
		}
		return h.ID()
	}
	done := runOne()
	if _, err := rt.Store().Create(ctx, store.Run{ID: "busy", Swarm: "shop"}, "elsewhere", time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := rt.Delete(ctx, "busy"); !errors.Is(err, swarm.ErrInvalidState) || n != 0 {
		t.Fatalf("Delete of a running run = %d, %v; want ErrInvalidState", n, err)
	}
	if n, err := rt.Delete(ctx, done); err != nil || n != 1 {
		t.Fatalf("Delete(%s) = %d, %v; want 1", done, n, err)
	}
	if _, err := rt.Status(ctx, done); !errors.Is(err, swarm.ErrNotFound) {
		t.Fatalf("Status after Delete: %v, want ErrNotFound", err)
	}
	if _, err := rt.Delete(ctx, done); !errors.Is(err, swarm.ErrNotFound) {
		t.Fatalf("Delete again: %v, want ErrNotFound", err)
	}

	old := runOne()
	if n, err := rt.Expire(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("Expire(1h) = %d, %v; want nothing that young deleted", n, err)
	}
	if n, err := rt.Expire(ctx, 0); err != nil || n != 1 {
		t.Fatalf("Expire(0) = %d, %v; want %s deleted", n, err, old)
	}
	if _, err := rt.Status(ctx, "busy"); err != nil {
		t.Fatalf("the running run after Expire: %v", err)
	}
	if _, err := rt.Expire(ctx, -time.Second); err == nil {
		t.Fatal("Expire of a negative age: no error")
	}
}
