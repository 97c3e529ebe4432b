package store

import (
	"context"
	"sync"
	"sync/atomic"
)

// Hub fans changes out to the functions subscribed with Watch. Stores
// embed a Hub to implement [Watcher] within one process, and call Publish
// after each change commits. The zero Hub is ready to use.
type Hub struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	n      atomic.Int32
	closed bool
}

type subscriber struct {
	ctx context.Context
	mu  sync.Mutex // serialises calls of fn
	fn  func(Change)
}

// Watch implements [Watcher]. It fails with ErrWatchClosed after Close.
func (h *Hub) Watch(ctx context.Context, fn func(Change)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := &subscriber{ctx: ctx, fn: fn}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrWatchClosed
	}
	if h.subs == nil {
		h.subs = map[*subscriber]struct{}{}
	}
	h.subs[s] = struct{}{}
	h.n.Add(1)
	h.mu.Unlock()
	context.AfterFunc(ctx, func() { h.remove(s) })
	return nil
}

func (h *Hub) remove(s *subscriber) {
	h.mu.Lock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		h.n.Add(-1)
	}
	h.mu.Unlock()
}

// Publish calls every subscriber's function with c. It costs one atomic
// load when nobody watches.
func (h *Hub) Publish(c Change) {
	if h.n.Load() == 0 {
		return
	}
	h.mu.Lock()
	subs := make([]*subscriber, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		s.mu.Lock()
		if s.ctx.Err() == nil { // not yet removed, but cancelled
			s.fn(c)
		}
		s.mu.Unlock()
	}
}

// Watching reports whether anyone is subscribed.
func (h *Hub) Watching() bool { return h.n.Load() > 0 }

// Close ends every subscription; later calls of Watch fail.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	clear(h.subs)
	h.n.Store(0)
	h.mu.Unlock()
}

// MakesRunnable reports whether a successful Append of u leaves the run
// Running and unowned, which is a [ChangeRunnable].
func (u Update) MakesRunnable() bool {
	return u.Release && (u.State == "" || u.State == Running)
}

// PublishAppend publishes the changes of a committed Append of u to run id.
func (h *Hub) PublishAppend(id string, u Update) {
	h.Publish(Change{RunID: id, Kind: ChangeAppended})
	if u.MakesRunnable() {
		h.Publish(Change{RunID: id, Kind: ChangeRunnable})
	}
}

// PublishCreate publishes the changes of a committed Create of run id.
func (h *Hub) PublishCreate(id, owner string) {
	h.Publish(Change{RunID: id, Kind: ChangeAppended})
	if owner == "" {
		h.Publish(Change{RunID: id, Kind: ChangeRunnable})
	}
}

// PublishSend publishes the changes of a committed Send to run id, which
// woke the run if it was paused.
func (h *Hub) PublishSend(id string, woke bool) {
	h.Publish(Change{RunID: id, Kind: ChangeInbox})
	if woke {
		h.Publish(Change{RunID: id, Kind: ChangeRunnable})
	}
}
