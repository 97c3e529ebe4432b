package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

// BenchmarkTaskBoard measures a team's task board under load through
// stores (which share their data; several handles on one database are
// several nodes). Each iteration fills a new board with 1,000 tasks from
// 4 adders at once, then has 4 claimers, each with a run of its own, try
// to claim every task, each starting a quarter of the board further on:
// every task is claimed by exactly one of them. It reports AddTask calls
// per second ("adds/s"), claims won per second ("claims/s") and ClaimTask
// calls per second, won or lost ("attempts/s").
func BenchmarkTaskBoard(b *testing.B, stores []store.Store) {
	const (
		workers = 4
		size    = 1000
	)
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	tss := make([]store.Teams, len(stores))
	for i, s := range stores {
		tss[i] = teams(b, s)
	}
	var (
		adding, claiming  time.Duration
		adds, wins, tries int64
	)
	// parallel runs fn(w) for w = 0..workers-1 at once and returns how
	// long they took.
	parallel := func(fn func(w int, ts store.Teams) error) time.Duration {
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		start := time.Now()
		for w := range workers {
			ts := tss[w%len(tss)]
			wg.Go(func() {
				if err := fn(w, ts); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		return elapsed
	}
	n := 0
	for b.Loop() {
		n++
		team := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), n)
		runs := make([]string, workers)
		for w := range runs {
			runs[w] = fmt.Sprintf("%s-run%d", team, w)
			if _, err := stores[0].Create(ctx, newRun(runs[w]), "o", long, nil); err != nil {
				b.Fatal(err)
			}
		}
		adding += parallel(func(w int, ts store.Teams) error {
			for i := range size / workers {
				if _, err := ts.AddTask(ctx, team, store.Task{Subject: fmt.Sprintf("task %d of adder %d", i, w)}); err != nil {
					return err
				}
			}
			return nil
		})
		adds += size
		var won, tried atomic.Int64
		claiming += parallel(func(w int, ts store.Teams) error {
			for i := range size {
				id := int64((i+w*size/workers)%size) + 1
				_, err := ts.ClaimTask(ctx, team, id, fmt.Sprint("member", w), runs[w])
				tried.Add(1)
				switch {
				case err == nil:
					won.Add(1)
				case !errors.Is(err, store.ErrConflict):
					return fmt.Errorf("claimer %d, task %d: %w", w, id, err)
				}
			}
			return nil
		})
		if won.Load() != size {
			b.Fatalf("%d claims won of %d tasks", won.Load(), size)
		}
		wins += won.Load()
		tries += tried.Load()
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(adds)/adding.Seconds(), "adds/s")
	b.ReportMetric(float64(wins)/claiming.Seconds(), "claims/s")
	b.ReportMetric(float64(tries)/claiming.Seconds(), "attempts/s")
}
