package swarmtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Timeout bounds the waits of a test that uses [Context]: long enough for a
// loaded machine running the race detector, short enough that a run that
// never ends fails the test with a message instead of hanging the package
// until the test binary's own timeout.
const Timeout = 45 * time.Second

// Context returns a context that is cancelled when the test ends and at the
// latest after [Timeout] (earlier if the test binary's -timeout comes
// first), so that every wait on it is bounded.
func Context(t testing.TB) context.Context {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	if td, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := td.Deadline(); ok {
			// Leave the test binary time to report which test hung.
			if end = end.Add(-5 * time.Second); end.Before(deadline) {
				deadline = end
			}
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// Recv receives from ch as <-ch does (a closed channel gives the zero
// value), failing the test with a message naming what it waited for if
// nothing arrives before ctx ends.
func Recv[T any](t testing.TB, ctx context.Context, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("waiting for %s: %v", what, context.Cause(ctx))
	}
	var zero T
	return zero
}

// Pending returns the error a check given to [Until] returns while what it
// waits for has not happened yet; its text, the state the check saw, is
// reported if the wait times out.
func Pending(format string, args ...any) error {
	return &pendingError{fmt.Sprintf(format, args...)}
}

type pendingError struct{ state string }

func (e *pendingError) Error() string { return e.state }

// Until calls check every few milliseconds until it returns nil. A check
// returns a [Pending] error while it should be called again, and any other
// error for a state the wait can never leave (a run that failed, say):
// the test then fails at once with it. The test also fails, naming what
// it waited for and the last state check reported, when ctx ends or
// [Timeout] has passed since the call, whichever comes first. So a wait
// for something that never happens fails in seconds, with a message,
// however long the test's own context is.
func Until(t testing.TB, ctx context.Context, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return
		}
		var p *pendingError
		if !errors.As(err, &p) {
			t.Fatalf("waiting until %s: %v", what, err)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s (%v); last seen: %s", what, context.Cause(ctx), p.state)
			return
		case <-tick.C:
		}
	}
}

// Barrier makes concurrent calls prove that they run at the same time:
// each call to Wait blocks until n calls are waiting, then a generation of
// n is released together and the next n calls form the next generation.
// Calls that run one at a time (or fewer than n at a time) never fill a
// generation, so Wait returns an error when its context ends instead of
// hanging; from then on the barrier is broken and every Wait returns the
// same error at once, so a test fails fast with a message.
//
// [Barrier.Enter] and [Barrier.Leave] count the running calls and
// [Barrier.Peak] reports their most at once, to check an upper bound on
// concurrency.
type Barrier struct {
	n int

	mu      sync.Mutex
	waiting int
	gen     chan struct{} // closed when the current generation is full
	broken  chan struct{}
	err     error

	running, peak, total atomic.Int64
}

// NewBarrier returns a barrier for generations of n calls.
func NewBarrier(n int) *Barrier {
	if n < 1 {
		panic("swarmtest: barrier of fewer than one call")
	}
	return &Barrier{n: n, gen: make(chan struct{}), broken: make(chan struct{})}
}

// Enter counts a call as running, for [Barrier.Peak].
func (b *Barrier) Enter() {
	b.total.Add(1)
	now := b.running.Add(1)
	for {
		p := b.peak.Load()
		if now <= p || b.peak.CompareAndSwap(p, now) {
			return
		}
	}
}

// Leave counts a call entered with [Barrier.Enter] as finished.
func (b *Barrier) Leave() { b.running.Add(-1) }

// Peak is the most calls that were running at once.
func (b *Barrier) Peak() int { return int(b.peak.Load()) }

// Total is how many calls entered.
func (b *Barrier) Total() int { return int(b.total.Load()) }

// Err is the error that broke the barrier, if any.
func (b *Barrier) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Wait blocks until n calls (this one included) are waiting, or returns an
// error if ctx ends first or the barrier is broken.
func (b *Barrier) Wait(ctx context.Context) error {
	b.mu.Lock()
	if b.err != nil {
		err := b.err
		b.mu.Unlock()
		return err
	}
	b.waiting++
	gen := b.gen
	if b.waiting == b.n {
		close(b.gen)
		b.waiting, b.gen = 0, make(chan struct{})
	}
	b.mu.Unlock()
	select {
	case <-gen:
		return nil
	case <-b.broken:
		return b.Err()
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-gen: // filled just now
			return nil
		default:
		}
		if b.err == nil {
			b.err = fmt.Errorf("barrier: only %d of %d calls were running at once: %w", b.waiting, b.n, context.Cause(ctx))
			close(b.broken)
		}
		return b.err
	}
}
