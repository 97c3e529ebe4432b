package postgres

import (
	"context"
	"time"
)

// PostgreSQL serializes the commits of all transactions that NOTIFY, on
// every database of the server, with one lock held until the commit's WAL
// record is flushed. Announced in the transaction that makes it, every
// write then waited for every other's flush: one node and four did the
// same number of steps per second. So writes return their announcements
// (payloads) instead, and the store's notifier sends them after the
// commit, those of concurrent writes in one transaction that does not wait
// for its flush, before the writes return (a notification is a hint: a
// lost one, as while the listener reconnects, is made up by polling; the
// changes themselves committed durably before).

// notifySQL sends the payloads $2 on channel $1 in one transaction that
// commits without waiting for the WAL flush.
const notifySQL = `SELECT pg_notify($1, p) FROM (SELECT set_config('synchronous_commit', 'off', true)) c, unnest($2::text[]) p`

// maxNotifyBatch is the most payloads the notifier sends in one
// statement.
const maxNotifyBatch = 1000

// announce has the notifier send payloads (nil ones are skipped) and
// waits until it has: a write returns after its change is announced, as
// when the announcement was part of its transaction, so that a watcher
// that starts after the write does not hear of it. Writes that announce at
// the same time share the notifier's next statement.
func (s *Store) announce(payloads ...*string) {
	done := make(chan struct{})
	s.nmu.Lock()
	n := len(s.pending)
	for _, p := range payloads {
		if p != nil {
			s.pending = append(s.pending, *p)
		}
	}
	if len(s.pending) == n || s.nclosed {
		s.pending = s.pending[:n]
		s.nmu.Unlock()
		return
	}
	s.waiting = append(s.waiting, done)
	s.nmu.Unlock()
	select {
	case s.nkick <- struct{}{}:
	default:
	}
	<-done
}

// notifyLoop sends the queued payloads until the store closes, then sends
// what is left once.
func (s *Store) notifyLoop() {
	defer close(s.ndone)
	for {
		select {
		case <-s.nkick:
		case <-s.nstop:
			s.nmu.Lock()
			s.nclosed = true
			s.nmu.Unlock()
			s.sendPending()
			return
		}
		s.sendPending()
	}
}

// sendPending sends the queued payloads, in order, and lets their writers
// go on. A failure drops them (as a broken listener would miss them): the
// runtime's polls find the changes.
func (s *Store) sendPending() {
	s.nmu.Lock()
	pending, waiting := s.pending, s.waiting
	s.pending, s.waiting = nil, nil
	s.nmu.Unlock()
	for len(pending) > 0 {
		batch := pending[:min(len(pending), maxNotifyBatch)]
		pending = pending[len(batch):]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := s.pool.Exec(ctx, notifySQL, s.channel, batch)
		cancel()
		if err != nil {
			s.notifyErrors.Add(1)
			s.log.Warn("postgres store: notifications lost", "db", s.target, "count", len(batch), "err", err)
		}
	}
	for _, done := range waiting {
		close(done)
	}
}
