package swarmtest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm/swarmtest"
)

func TestBarrierReleasesGenerations(t *testing.T) {
	ctx := swarmtest.Context(t)
	b := swarmtest.NewBarrier(3)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			b.Enter()
			defer b.Leave()
			errs <- b.Wait(ctx)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if b.Total() != 6 || b.Peak() < 3 || b.Err() != nil {
		t.Errorf("total %d peak %d err %v", b.Total(), b.Peak(), b.Err())
	}
}

func TestBarrierBreaksWhenCallsRunOneAtATime(t *testing.T) {
	b := swarmtest.NewBarrier(2)
	ctx, cancel := context.WithTimeout(swarmtest.Context(t), 50*time.Millisecond)
	defer cancel()
	err := b.Wait(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lone call: %v, want a deadline error", err)
	}
	// Broken: the next call fails at once, even with a live context.
	if err2 := b.Wait(swarmtest.Context(t)); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("after the break: %v, want %v", err2, err)
	}
}
