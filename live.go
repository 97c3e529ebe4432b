package swarm

import (
	"sync"
	"sync/atomic"
)

// hub passes live-only events (streamed model text) to the subscribers of
// a run. Delivery is best effort: a subscriber that falls behind by more
// than its buffer loses deltas, never journaled events.
type hub struct {
	n    atomic.Int64
	mu   sync.Mutex
	subs map[string]map[*liveSub]struct{}
}

type liveSub struct {
	ch chan Event
}

func (h *hub) subscribe(id string) *liveSub {
	s := &liveSub{ch: make(chan Event, 256)}
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]map[*liveSub]struct{}{}
	}
	m := h.subs[id]
	if m == nil {
		m = map[*liveSub]struct{}{}
		h.subs[id] = m
	}
	m[s] = struct{}{}
	h.mu.Unlock()
	h.n.Add(1)
	return s
}

func (h *hub) unsubscribe(id string, s *liveSub) {
	h.mu.Lock()
	if m := h.subs[id]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(h.subs, id)
		}
	}
	h.mu.Unlock()
	h.n.Add(-1)
}

// watched reports whether run id has live subscribers.
func (h *hub) watched(id string) bool {
	if h.n.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[id]) > 0
}

func (h *hub) publish(id string, ev Event) {
	if h.n.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[id] {
		select {
		case s.ch <- ev:
		default:
		}
	}
}

// EventsOption configures [Runtime.Events].
type EventsOption func(*eventsConfig)

type eventsConfig struct{ deltas bool }

// WithDeltas makes an event stream include live-only delta events (streamed
// model text, Seq 0) of model calls made in this process while following.
func WithDeltas() EventsOption { return func(c *eventsConfig) { c.deltas = true } }
