package team_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

// benchStores runs f on SQLite and PostgreSQL (skipped loudly without a
// server); url gives a fresh file or schema each time it is called.
func benchStores(b *testing.B, f func(b *testing.B, url func() string)) {
	b.Run("sqlite", func(b *testing.B) {
		f(b, func() string { return "sqlite:" + filepath.Join(b.TempDir(), "team.db") })
	})
	b.Run("postgres", func(b *testing.B) {
		pgtest.Server(b)
		f(b, func() string { return pgtest.URL(b, "pool_max_conns=8") })
	})
}

// BenchmarkTeamDeliveryLatency measures how long a mail takes from the
// start of its post in this process to the model call of an idle teammate
// driven by a worker in another process that is given it: the store's
// wake-up of the other node (PostgreSQL NOTIFY; SQLite's inbox poll), the
// claim, the replay of the teammate's journal and its inbox read. It
// reports the 50th and 99th percentiles in milliseconds.
func BenchmarkTeamDeliveryLatency(b *testing.B) {
	benchStores(b, func(b *testing.B, url func() string) {
		u := url()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		rt, tr := startSinks(b, ctx, u, 1)
		sink := tr.ID() + "~" + memberName(0)
		worker := startProc(b, ctx, "worker", u, "1", "stamp")
		defer worker.stop(b)
		mb := rt.Store().(store.Mailboxes)
		var lats []time.Duration
		n := 0
		for b.Loop() {
			n++
			m := store.Mail{ID: fmt.Sprint("ping-", n), From: "poster", Type: team.MailMessage, Content: fmt.Sprint("t=", time.Now().UnixNano())}
			if _, err := mb.Post(ctx, []string{sink}, m); err != nil {
				b.Fatal(err)
			}
			ns, err := strconv.ParseInt(strings.TrimPrefix(worker.expect(b, ctx, "lat "), "lat "), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			lats = append(lats, time.Duration(ns))
			b.StopTimer()
			waitPaused(b, ctx, rt, sink) // idle again before the next mail
			b.StartTimer()
		}
		slices.Sort(lats)
		b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "p99_ms")
		b.ReportMetric(0, "ns/op")
	})
}

// waitPaused waits until run id is paused.
func waitPaused(tb testing.TB, ctx context.Context, rt *swarm.Runtime, id string) {
	tb.Helper()
	swarmtest.Until(tb, ctx, id+" goes idle", func() error {
		r, err := rt.Store().Get(ctx, id)
		switch {
		case err != nil:
			return err
		case r.State.Terminal():
			return fmt.Errorf("%s has ended: %s %s", id, r.State, r.Reason)
		case r.State != store.Paused || r.Owner != "":
			return swarmtest.Pending("%s %s, owner %q", id, r.State, r.Owner)
		}
		return nil
	})
}

// BenchmarkTeamInbox: 4 processes post 1,000 mails each into one
// teammate's inbox while a worker in a fifth process drains it; it reports
// mails posted per second (until every sender is done) and consumed per
// second (until the inbox is empty). Run it with -benchtime=1x.
func BenchmarkTeamInbox(b *testing.B) {
	benchStores(b, func(b *testing.B, url func() string) {
		var posted, drained float64
		for b.Loop() {
			f := drainAcross(b, url(), 4, 1000)
			posted += float64(f.mails) / f.post.Seconds()
			drained += float64(f.mails) / f.all.Seconds()
		}
		b.ReportMetric(posted/float64(b.N), "posted/s")
		b.ReportMetric(drained/float64(b.N), "consumed/s")
		b.ReportMetric(0, "ns/op")
	})
}

// idleTeam starts a team of n teammates on s, waits until all are idle,
// and returns what they added to the heap and to the goroutines, per
// teammate, after a garbage collection.
func idleTeam(tb testing.TB, s store.Store, n int) (rt *swarm.Runtime, tr *team.TeamRun, heap, goroutines float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := sinkModel(n, 2)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	rt, err := swarm.New(swarm.Config{Store: s, Model: m, Lease: 5 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	if tr, err = sinkTeam(n).Start(ctx, rt, "", swarm.WithID("idle")); err != nil {
		tb.Fatal(err)
	}
	waitIdle(tb, ctx, tr, n+1)
	// The drivers of the teammates' first pieces of work are ending.
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	for rt.Metrics().RunsDriven > 0 && wait.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	settleGoroutines(wait, g0)
	g1 := runtime.NumGoroutine()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return rt, tr, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n), float64(g1-g0) / float64(n)
}

// TestTeamIdleTeammatesHoldNothing: 200 idle teammates hold no lease and
// no goroutine: the runtime drives nothing, no run has an owner, and the
// goroutines are the handful a runtime has without a team. On the memory
// store and on SQLite.
func TestTeamIdleTeammatesHoldNothing(t *testing.T) {
	const n = 200
	for _, name := range []string{"memory", "sqlite"} {
		t.Run(name, func(t *testing.T) {
			// 200 teammates on SQLite under the race detector take a while
			// on a busy machine: more than ctxT's deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var s store.Store = memory.New()
			if name == "sqlite" {
				s = openStore(t, ctx, "sqlite:"+filepath.Join(t.TempDir(), "idle.db"))
			}
			g0 := runtime.NumGoroutine()
			rt, tr, _, _ := idleTeam(t, s, n)
			ms, err := tr.Roster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				r, err := s.Get(ctx, m.RunID)
				if err != nil {
					t.Fatal(err)
				}
				if r.Owner != "" || !r.LeaseUntil.IsZero() || r.State != store.Paused {
					t.Fatalf("idle member %s: state %s, owner %q until %v", m.Name, r.State, r.Owner, r.LeaseUntil)
				}
			}
			if d := rt.Metrics().RunsDriven; d != 0 {
				t.Fatalf("the runtime drives %d runs with every member idle", d)
			}
			// A goroutine per idle teammate would be 200 more.
			if extra := settleGoroutines(ctx, g0); extra >= 50 {
				t.Fatalf("%d idle teammates: %d goroutines more than before the runtime", n, extra)
			} else {
				t.Logf("%d idle teammates: %d goroutines more than before the runtime", n, extra)
			}
		})
	}
}

// settleGoroutines waits (until ctx ends) for the goroutines to be fewer
// than 50 more than g0, as they are once ending drivers have returned, and
// returns how many more they are.
func settleGoroutines(ctx context.Context, g0 int) int {
	for {
		extra := runtime.NumGoroutine() - g0
		if extra < 50 {
			return extra
		}
		select {
		case <-ctx.Done():
			return extra
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// BenchmarkTeamIdleTeammate spawns 1,000 teammates that go idle and
// reports the heap (bytes) and goroutines each one adds once idle. On the
// memory store the bytes include the store's copy of the teammates' runs
// and journals; on SQLite they do not (only the driver's page cache).
// Run it with -benchtime=1x.
func BenchmarkTeamIdleTeammate(b *testing.B) {
	const n = 1000
	for _, name := range []string{"memory", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			var heap, gs float64
			for b.Loop() {
				var s store.Store = memory.New()
				if name == "sqlite" {
					s = openStore(b, context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "idle.db"))
				}
				rt, _, h, g := idleTeam(b, s, n)
				heap, gs = heap+h, gs+g
				rt.Close()
			}
			b.ReportMetric(heap/float64(b.N), "heap_B/teammate")
			b.ReportMetric(gs/float64(b.N), "goroutines/teammate")
			b.ReportMetric(0, "ns/op")
		})
	}
}
