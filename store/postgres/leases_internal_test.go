package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
)

func openT(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), pgtest.URL(t, "pool_max_conns=8"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rowVersion is the physical version (ctid, xmin) of run id's row: it
// changes with every update of the row.
func rowVersion(t *testing.T, s *Store, id string) string {
	t.Helper()
	var v string
	if err := s.pool.QueryRow(t.Context(), `SELECT ctid::text || '/' || xmin::text FROM swarm_runs WHERE id = $1`, id).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestHeartbeatLeavesRuns: a renewal and an idle poll write no run's row
// (so they leave no dead entries in its indexes); the renewal still keeps
// the owner's runs from being claimed, and its lapse lets them go.
func TestHeartbeatLeavesRuns(t *testing.T) {
	s := openT(t)
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		if _, err := s.Create(ctx, store.Run{ID: id, Swarm: "sw"}, "n1", 50*time.Millisecond, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := rowVersion(t, s, "a")
	if rn, err := s.Renew(ctx, "n1", time.Hour); err != nil || len(rn.Held) != 2 {
		t.Fatalf("Renew = %+v, %v", rn, err)
	}
	time.Sleep(100 * time.Millisecond) // past the runs' own leases
	if ls, err := s.ClaimExpired(ctx, "n2", time.Hour, 10); err != nil || len(ls) != 0 {
		t.Fatalf("ClaimExpired of a renewed owner's runs = %+v, %v", ls, err)
	}
	if after := rowVersion(t, s, "a"); after != before {
		t.Fatalf("renewal and idle poll updated the run's row: %s -> %s", before, after)
	}
	if r, err := s.Get(ctx, "a"); err != nil || time.Until(r.LeaseUntil) < 30*time.Minute {
		t.Fatalf("Get after Renew: LeaseUntil %v, %v; want the renewed lease", r.LeaseUntil, err)
	}
	// The owner's lease lapses: its runs go to the next poll.
	if _, err := s.Renew(ctx, "n1", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	ls, err := s.ClaimExpired(ctx, "n2", time.Hour, 10)
	if err != nil || len(ls) != 2 || ls[0].RunID != "a" || ls[0].Epoch != 2 || ls[0].From != "n1" {
		t.Fatalf("ClaimExpired after the owner's lapse = %+v, %v", ls, err)
	}
}

// TestSweepLeases: the row of an owner whose lease ran out goes once it
// holds no running run, not before; a live owner's stays.
func TestSweepLeases(t *testing.T) {
	s := openT(t)
	ctx := t.Context()
	owners := func() map[string]bool {
		rows, err := s.pool.Query(ctx, `SELECT owner FROM swarm_leases`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]bool{}
		for rows.Next() {
			var o string
			if err := rows.Scan(&o); err != nil {
				t.Fatal(err)
			}
			out[o] = true
		}
		return out
	}
	l, err := s.Create(ctx, store.Run{ID: "g1", Swarm: "sw"}, "gone", time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, store.Run{ID: "l1", Swarm: "sw"}, "live", time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(ctx, "live", time.Hour); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if n, err := s.sweepLeases(ctx, "c"); err != nil || n != 0 {
		t.Fatalf("sweep with a lapsed owner holding a run = %d, %v", n, err)
	}
	if o := owners(); !o["gone"] || !o["live"] {
		t.Fatalf("owners after the first sweep: %v", o)
	}
	if _, err := s.Append(ctx, l, nil, store.Update{State: store.Completed}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.sweepLeases(ctx, "c"); err != nil || n != 1 {
		t.Fatalf("sweep of a lapsed owner holding nothing = %d, %v", n, err)
	}
	if o := owners(); o["gone"] || !o["live"] {
		t.Fatalf("owners after the second sweep: %v", o)
	}
}

// TestSweepRace: owners are given runs, one after another, while sweeps
// delete the lapsed rows of owners that hold none: a running run's owner
// always keeps a row (so that the claim poll can find the run), even when
// the sweep looked at the owner between its previous run's end and the
// next one's creation.
func TestSweepRace(t *testing.T) {
	s := openT(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := s.sweepLeases(ctx, "c"); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var orphans atomic.Int64
	var owners sync.WaitGroup
	for w := range 3 {
		owners.Go(func() {
			owner := fmt.Sprint("x", w)
			for i := range 200 {
				l, err := s.Create(t.Context(), store.Run{ID: fmt.Sprintf("%s-%d", owner, i), Swarm: "sw"}, owner, time.Hour, nil)
				if err != nil {
					t.Error(err)
					return
				}
				var held bool
				if err := s.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM swarm_leases WHERE owner = $1)`, owner).Scan(&held); err != nil {
					t.Error(err)
					return
				}
				if !held {
					orphans.Add(1)
				}
				if _, err := s.Append(t.Context(), l, nil, store.Update{State: store.Completed}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	owners.Wait()
	cancel()
	wg.Wait()
	if n := orphans.Load(); n != 0 {
		t.Fatalf("%d of 600 runs were running while their owner had no lease row", n)
	}
}
