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
// commit, several in one transaction that does not wait for its flush (a
// notification is a hint: a lost one, as while the listener reconnects,
// is made up by polling; the changes themselves committed durably
// before).

// notifySQL sends the payloads $2 on channel $1 in one transaction that
// commits without waiting for the WAL flush.
const notifySQL = `SELECT pg_notify($1, p) FROM (SELECT set_config('synchronous_commit', 'off', true)) c, unnest($2::text[]) p`

// maxNotifyBatch is the most payloads the notifier sends in one
// statement.
const maxNotifyBatch = 1000

// announce queues payloads (nil ones are skipped) for the notifier.
func (s *Store) announce(payloads ...*string) {
	s.nmu.Lock()
	n := len(s.pending)
	for _, p := range payloads {
		if p != nil {
			s.pending = append(s.pending, *p)
		}
	}
	added := len(s.pending) > n
	s.nmu.Unlock()
	if added {
		select {
		case s.nkick <- struct{}{}:
		default:
		}
	}
}

// notifyLoop sends the queued payloads until the store closes, then sends
// what is left once.
func (s *Store) notifyLoop() {
	defer close(s.ndone)
	for {
		select {
		case <-s.nkick:
		case <-s.nstop:
			s.sendPending()
			return
		}
		s.sendPending()
	}
}

// sendPending sends the queued payloads, in order. A failure drops them
// (as a broken listener would miss them): the runtime's polls find the
// changes.
func (s *Store) sendPending() {
	for {
		s.nmu.Lock()
		batch := s.pending[:min(len(s.pending), maxNotifyBatch)]
		s.pending = s.pending[len(batch):]
		if len(s.pending) == 0 {
			s.pending = nil
		}
		s.nmu.Unlock()
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := s.pool.Exec(ctx, notifySQL, s.channel, batch)
		cancel()
		if err != nil {
			s.notifyErrors.Add(1)
			s.log.Warn("postgres store: notifications lost", "db", s.target, "count", len(batch), "err", err)
		}
	}
}
