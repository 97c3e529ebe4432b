package swarmtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// fatalRecorder is a testing.TB whose Fatalf records its message instead
// of ending the test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestUntil(t *testing.T) {
	ctx := swarmtest.Context(t)
	// Done after a few checks.
	r := &fatalRecorder{TB: t}
	n := 0
	swarmtest.Until(r, ctx, "three checks", func() error {
		if n++; n < 3 {
			return swarmtest.Pending("check %d", n)
		}
		return nil
	})
	if r.fatal != "" || n != 3 {
		t.Errorf("a wait that ends: %d checks, failure %q", n, r.fatal)
	}
	// A state the wait cannot leave fails it at once.
	r, n = &fatalRecorder{TB: t}, 0
	swarmtest.Until(r, ctx, "the run completes", func() error {
		n++
		return errors.New("the run failed: boom")
	})
	if n != 1 || !strings.Contains(r.fatal, "waiting until the run completes: the run failed: boom") {
		t.Errorf("a wait that cannot end: %d checks, failure %q", n, r.fatal)
	}
	// A wait that never ends fails when its context does, with the last
	// state seen.
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	r, n = &fatalRecorder{TB: t}, 0
	swarmtest.Until(r, short, "the team goes idle", func() error {
		n++
		return swarmtest.Pending("bob working (check %d)", n)
	})
	if want := fmt.Sprintf("last seen: bob working (check %d)", n); !strings.HasPrefix(r.fatal, "timed out waiting until the team goes idle") || !strings.HasSuffix(r.fatal, want) {
		t.Errorf("a wait that never ends: failure %q, want it to end with %q", r.fatal, want)
	}
}
