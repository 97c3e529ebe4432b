package sqlite

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/swarmrt/swarm/store"
)

// DefaultInboxPoll is how often a watched Store looks for inbox messages
// sent by other processes sharing its file.
const DefaultInboxPoll = 25 * time.Millisecond

// WithInboxPoll sets how often a watched Store looks for inbox messages
// sent by other processes (default DefaultInboxPoll).
func WithInboxPoll(d time.Duration) Option { return func(c *config) { c.inboxPoll = d } }

// Watch implements store.Watcher. It reports the changes made through this
// Store as they commit and, since SQLite cannot notify other processes, the
// inbox messages and mails sent by other processes sharing the file by
// polling: each poll is one indexed query for messages (and one for mails)
// newer than the last one seen, so a stop or resume sent by `swarm stop` in
// another process reaches the process driving the run within about one
// poll interval. Other changes made by other processes are not reported.
func (s *Store) Watch(ctx context.Context, fn func(store.Change)) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.startPoller(ctx); err != nil {
		return fmt.Errorf("watch %s: read the inbox: %w", s.path, err)
	}
	return s.hub.Watch(ctx, fn)
}

// startPoller starts the inbox poller unless it runs. It starts after the
// newest message committed before it returns, so that it reports every
// later one (earlier ones are found by heartbeats). The caller holds
// closeMu for reading.
func (s *Store) startPoller(ctx context.Context) error {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	if s.pollDone != nil {
		return nil
	}
	var last, lastMail int64
	if err := s.rd.lastMessage.QueryRowContext(ctx).Scan(&last); err != nil {
		return err
	}
	if err := s.rdb.QueryRowContext(ctx, lastMailQuery).Scan(&lastMail); err != nil {
		return err
	}
	s.pollDone = make(chan struct{})
	s.polling.Store(true)
	go s.pollInbox(last, lastMail)
	return nil
}

// pollInbox publishes a ChangeInbox (and, for a resume, which wakes a
// paused run, a ChangeRunnable) for each inbox message committed since the
// previous poll, by any process, and the same for mails (see pollMail),
// until the Store closes.
func (s *Store) pollInbox(last, lastMail int64) {
	defer close(s.pollDone)
	t := time.NewTicker(s.cfg.inboxPoll)
	defer t.Stop()
	type msg struct {
		id        int64
		run, kind string
	}
	var batch []msg
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if !s.hub.Watching() {
			continue
		}
		lastMail = s.pollMail(lastMail)
		rows, err := s.rd.newMessages.Query(last)
		if err != nil {
			continue // a busy or closing database: try again next tick
		}
		batch = batch[:0]
		for rows.Next() {
			var m msg
			if err := rows.Scan(&m.id, &m.run, &m.kind); err != nil {
				break
			}
			batch = append(batch, m)
		}
		err = rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			continue
		}
		for _, m := range batch {
			last = max(last, m.id)
			if s.own.took(m.id, last) {
				continue // Send has published it
			}
			s.hub.Publish(store.Change{RunID: m.run, Kind: store.ChangeInbox})
			if store.MessageKind(m.kind) == store.MsgResume {
				s.hub.Publish(store.Change{RunID: m.run, Kind: store.ChangeRunnable})
			}
		}
	}
}

// ownMessages remembers the ids of the messages sent through this Store
// while its inbox poller runs, so that the poller does not report them a
// second time.
type ownMessages struct {
	mu  sync.Mutex
	ids map[int64]struct{}
}

// noteSent records the id of a message sent through this Store.
func (s *Store) noteSent(id int64) {
	if s.polling.Load() {
		s.own.add(id)
	}
}

// add records id.
func (o *ownMessages) add(id int64) {
	o.mu.Lock()
	if o.ids == nil {
		o.ids = map[int64]struct{}{}
	}
	o.ids[id] = struct{}{}
	o.mu.Unlock()
}

// took reports whether id was sent through this Store, and forgets it and
// every id up to last, which the poller has passed.
func (o *ownMessages) took(id, last int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.ids[id]
	for k := range o.ids {
		if k <= last {
			delete(o.ids, k)
		}
	}
	return ok
}

// lastMessageQuery gives the id of the newest inbox message, 0 if none.
const lastMessageQuery = `SELECT coalesce(max(id), 0) FROM inbox`

// newMessagesQuery lists the inbox messages after an id, with their runs.
const newMessagesQuery = `SELECT inbox.id, runs.id, inbox.kind FROM inbox JOIN runs ON runs.rid = inbox.rid
	WHERE inbox.id > ? ORDER BY inbox.id LIMIT 1000`
