package swarm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swarmrt/swarm/store"
)

// WorkOptions configures [Runtime.Work].
type WorkOptions struct {
	// MaxRuns caps the runs this runtime drives at once, counting the runs
	// it started or resumed itself (default 64).
	MaxRuns int
	// DrainTimeout is how long Work, once its context ends, waits for the
	// runs driven here to pause or finish before it interrupts them and
	// releases their leases to other nodes (default 10s; negative: at
	// once). Runs waiting for a model are interrupted at once.
	DrainTimeout time.Duration
}

// Metrics counts the work of a runtime since New, for monitoring.
type Metrics struct {
	// RunsClaimed counts runs claimed by Work and Recover: runnable runs
	// and runs taken over from owners whose lease expired.
	RunsClaimed int64 `json:"runs_claimed"`
	// RunsDriven is the number of runs driven by this runtime now.
	RunsDriven int64 `json:"runs_driven"`
	// LeaseRenewals counts successful heartbeats (one renews every lease
	// of this runtime).
	LeaseRenewals int64 `json:"lease_renewals"`
	// LeasesLost counts runs this runtime stopped driving because their
	// lease was taken over or could not be renewed in time, whether the
	// heartbeat or a rejected journal append found out (each run once).
	LeasesLost int64 `json:"leases_lost"`
	// AppendsFenced counts journal appends the store rejected because
	// this runtime's lease of the run was stale: the writes of a node that
	// was paused or cut off past its lease, which never reach the journal.
	AppendsFenced int64 `json:"appends_fenced"`
	// Notifications counts change notifications received from the store
	// (zero for stores that are not a store.Watcher).
	Notifications int64 `json:"notifications"`
}

// workState is the runtime's share of multi-node work: the worker's wake-up
// channel and the counters of Metrics.
type workState struct {
	wake    chan struct{}
	running atomic.Bool
	// draining is set while Work drains: model calls are interrupted.
	draining atomic.Bool

	claimed, renewals, lost, fenced, notes atomic.Int64

	// orphans counts, per run, the heartbeats that found the run leased to
	// this runtime without a driver here (used by the heartbeat only).
	orphans map[string]int

	// stalls counts, per run, the drives in a row that gave up on an error
	// of the store while the journal stayed at the same sequence number.
	stallMu sync.Mutex
	stalls  map[string]stall
}

// maxStallsTracked bounds the runs whose stalls a runtime remembers.
const maxStallsTracked = 4096

// stall is a run's drives in a row that gave up at journal sequence seq.
type stall struct {
	seq int64
	n   int
}

// stalled notes that a drive of run id gave up with its journal at seq and
// returns how many drives in a row gave up there.
func (w *workState) stalled(id string, seq int64) int {
	w.stallMu.Lock()
	defer w.stallMu.Unlock()
	if w.stalls == nil {
		w.stalls = map[string]stall{}
	}
	s, ok := w.stalls[id]
	if !ok && len(w.stalls) >= maxStallsTracked {
		// Runs that stalled once and then ended elsewhere are never
		// unstalled here: forget one so that the map stays bounded.
		for k := range w.stalls {
			delete(w.stalls, k)
			break
		}
	}
	if s.seq != seq || s.n == 0 {
		s = stall{seq: seq}
	}
	s.n++
	w.stalls[id] = s
	return s.n
}

// unstall forgets run id's stalls: a drive of it ended well (it paused,
// finished or was handed over).
func (w *workState) unstall(id string) {
	w.stallMu.Lock()
	delete(w.stalls, id)
	w.stallMu.Unlock()
}

// Metrics returns the runtime's counters.
func (rt *Runtime) Metrics() Metrics {
	return Metrics{
		RunsClaimed:   rt.work.claimed.Load(),
		RunsDriven:    int64(rt.driving()),
		LeaseRenewals: rt.work.renewals.Load(),
		LeasesLost:    rt.work.lost.Load(),
		AppendsFenced: rt.work.fenced.Load(),
		Notifications: rt.work.notes.Load(),
	}
}

func (rt *Runtime) driving() int {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return len(rt.active)
}

// subscribe prepares the worker and, if the store announces changes,
// listens to them for the runtime's lifetime.
func (rt *Runtime) subscribe() error {
	rt.work.wake = make(chan struct{}, 1)
	w, ok := rt.store.(store.Watcher)
	if !ok {
		return nil
	}
	if err := w.Watch(rt.ctx, rt.onChange); err != nil {
		return fmt.Errorf("watch the store for changes: %w", err)
	}
	return nil
}

// onChange reacts to a change committed by this or another process. It
// runs on the store's notification goroutine, so it never blocks.
func (rt *Runtime) onChange(c store.Change) {
	rt.work.notes.Add(1)
	switch c.Kind {
	case store.ChangeRunnable:
		rt.pokeWorker()
	case store.ChangeInbox:
		// A stop for a run driven here takes effect now, not at the next
		// heartbeat.
		rt.mu.Lock()
		ok := rt.active[c.RunID] != nil && !rt.closed
		if ok {
			rt.wg.Add(1)
		}
		rt.mu.Unlock()
		if ok {
			go func() {
				defer rt.wg.Done()
				rt.checkInbox(c.RunID)
			}()
		}
	case store.ChangeAppended:
		rt.mu.RLock()
		local := rt.active[c.RunID] != nil
		rt.mu.RUnlock()
		if local {
			return // its driver has woken the waiters already
		}
	}
	if c.RunID != "" {
		rt.notes.notify(c.RunID)
	}
}

// pokeWorker makes Work look for runnable runs now.
func (rt *Runtime) pokeWorker() {
	select {
	case rt.work.wake <- struct{}{}:
	default:
	}
}

// errDraining interrupts runs when Work drains; like ErrClosed, it makes
// the driver release the lease.
var errDraining = fmt.Errorf("draining: %w", ErrClosed)

// Work claims runnable runs (released, resumed, or whose owner's lease
// expired) and drives them, until ctx ends; then it drains: it stops
// claiming, waits up to DrainTimeout for the runs driven here to pause or
// finish, and interrupts the others, releasing their leases so that another
// node continues them at once. It returns nil after draining, or ErrClosed
// if the runtime is closed first.
//
// Work wakes when the store announces a runnable run ([store.Watcher]) and
// otherwise looks every Config.PollInterval. A runtime runs one Work at a
// time; runs of swarms it does not know are released for other nodes.
func (rt *Runtime) Work(ctx context.Context, opts WorkOptions) error {
	if !rt.work.running.CompareAndSwap(false, true) {
		return errors.New("swarm: Work is already running on this runtime")
	}
	defer rt.work.running.Store(false)
	maxRuns := opts.MaxRuns
	if maxRuns <= 0 {
		maxRuns = 64
	}
	drain := opts.DrainTimeout
	if drain == 0 {
		drain = 10 * time.Second
	}
	t := time.NewTimer(rt.cfg.PollInterval)
	defer t.Stop()
	for {
		if ctx.Err() != nil {
			return rt.drain(drain)
		}
		if rt.ctx.Err() != nil {
			return ErrClosed
		}
		claimed, unknown := 0, false
		free := maxRuns - rt.driving()
		if free > 0 {
			var err error
			claimed, unknown, err = rt.claimRunnable(free)
			if err != nil && rt.ctx.Err() == nil {
				rt.log.Warn("claiming runnable runs failed", "owner", rt.owner, "err", err)
			}
			if claimed == free && err == nil && !unknown {
				continue // there may be more
			}
		}
		t.Reset(rt.cfg.PollInterval)
		wake := rt.work.wake
		if unknown {
			wake = nil // released runs of unknown swarms: do not take them back at once
		}
		select {
		case <-ctx.Done():
		case <-rt.ctx.Done():
		case <-wake:
		case <-t.C:
		}
	}
}

// claimRunnable claims up to limit runnable runs and drives those of known
// swarms. It reports how many it claimed and whether any was of an unknown
// swarm (and released).
func (rt *Runtime) claimRunnable(limit int) (int, bool, error) {
	leases, err := rt.store.ClaimExpired(rt.ctx, rt.owner, rt.cfg.Lease, limit)
	if err != nil {
		return 0, false, err
	}
	unknown := false
	for _, l := range leases {
		ok, err := rt.adopt(rt.ctx, l)
		if err != nil {
			return len(leases), unknown, err
		}
		unknown = unknown || !ok
	}
	return len(leases), unknown, nil
}

// adopt drives a run this runtime has just claimed. A run of a swarm the
// runtime does not know is released again and reported with false.
func (rt *Runtime) adopt(ctx context.Context, l store.Lease) (bool, error) {
	rt.work.claimed.Add(1)
	r, err := rt.store.Get(ctx, l.RunID)
	if err != nil {
		_ = rt.store.Release(ctx, l)
		return false, fmt.Errorf("recover %s: %w", l.RunID, err)
	}
	info, err := rt.info(r.Swarm)
	if err != nil {
		rt.log.Warn("cannot drive run of unknown swarm", "run", l.RunID, "swarm", r.Swarm)
		_ = rt.store.Release(ctx, l)
		return false, nil
	}
	if on, err := rt.onEngine(ctx, r); err != nil || on {
		// The engine of Config.Engine drives it: hand it back at once.
		_ = rt.store.Release(ctx, l)
		if err != nil {
			return false, fmt.Errorf("recover %s: %w", l.RunID, err)
		}
		return false, nil
	}
	rt.launch(l, &runner{rt: rt, id: l.RunID, info: info})
	return true, nil
}

// drain waits up to timeout for the runs driven here to pause or finish,
// then interrupts the rest, which release their leases. A run waiting for a
// model is interrupted at once, and so is one that starts a model call
// while Work drains: a model call in flight has no journaled effect, so the
// next owner repeats it, whereas a tool call in flight is given the time to
// finish and be journaled.
func (rt *Runtime) drain(timeout time.Duration) error {
	rt.work.draining.Store(true)
	defer rt.work.draining.Store(false)
	rt.mu.RLock()
	ds := make([]*driver, 0, len(rt.active))
	for _, d := range rt.active {
		ds = append(ds, d)
	}
	rt.mu.RUnlock()
	for _, d := range ds {
		if d.inModel.Load() > 0 {
			d.cancel(errDraining)
		}
	}
	deadline := time.NewTimer(max(timeout, 0))
	defer deadline.Stop()
wait:
	for _, d := range ds {
		select {
		case <-d.done:
		case <-deadline.C:
			break wait
		}
	}
	for _, d := range ds {
		d.cancel(errDraining)
	}
	for _, d := range ds {
		<-d.done
	}
	return nil
}

// enterModelCall notes that the run driven under lease is calling a model,
// until the returned function is called. While Work drains, the run is
// interrupted (its lease released) instead: see drain.
func (rt *Runtime) enterModelCall(id string, lease store.Lease) (left func()) {
	rt.mu.RLock()
	d := rt.active[id]
	rt.mu.RUnlock()
	if d == nil || d.lease != lease {
		return func() {}
	}
	d.inModel.Add(1)
	if rt.work.draining.Load() {
		d.cancel(errDraining)
	}
	return func() { d.inModel.Add(-1) }
}

// adoptOrphans drives again the runs that the heartbeat found leased to
// this runtime without a driver here in two heartbeats in a row: their
// driver gave up on an error of the store (a database restarting, say),
// and the heartbeat would otherwise keep their leases alive forever.
func (rt *Runtime) adoptOrphans(held []string) {
	if rt.work.orphans == nil {
		rt.work.orphans = map[string]int{}
	}
	seen := make(map[string]bool, len(held))
	rt.mu.RLock()
	for _, id := range held {
		if rt.active[id] == nil {
			seen[id] = true
		}
	}
	rt.mu.RUnlock()
	for id := range rt.work.orphans {
		if !seen[id] {
			delete(rt.work.orphans, id)
		}
	}
	for id := range seen {
		rt.work.orphans[id]++
		if rt.work.orphans[id] < 2 {
			continue
		}
		delete(rt.work.orphans, id)
		if err := rt.Drive(rt.ctx, id); err != nil {
			rt.log.Warn("cannot drive orphaned run again", "run", id, "err", err)
			if r, gerr := rt.store.Get(rt.ctx, id); gerr == nil && r.Owner == rt.owner {
				_ = rt.store.Release(rt.ctx, store.Lease{RunID: id, Owner: r.Owner, Epoch: r.Epoch})
			}
		}
	}
}
