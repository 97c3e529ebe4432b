package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Mailboxes = (*Store)(nil)

// mailSchema is schema version 3: mailboxes. A mail is kept after it is
// acknowledged (the log is append-only); mailboxes holds, per run that has
// mail, the Seq of its last mail and its ack cursor. mail.mid numbers the
// mails of every run in commit order, so that a watcher finds the mails
// other processes posted since it last looked; woke says whether the post
// made its run runnable.
var mailSchema = []string{
	`CREATE TABLE mail (
		mid        INTEGER PRIMARY KEY,
		rid        INTEGER NOT NULL,
		seq        INTEGER NOT NULL,
		id         TEXT NOT NULL,
		sender     TEXT NOT NULL DEFAULT '',
		type       TEXT NOT NULL DEFAULT '',
		request_id TEXT NOT NULL DEFAULT '',
		reply_to   TEXT NOT NULL DEFAULT '',
		content    TEXT NOT NULL DEFAULT '',
		time       INTEGER NOT NULL,
		woke       INTEGER NOT NULL DEFAULT 0,
		UNIQUE (rid, seq),
		UNIQUE (rid, id)
	)`,
	`CREATE TABLE mailboxes (
		rid   INTEGER PRIMARY KEY,
		last  INTEGER NOT NULL,
		acked INTEGER NOT NULL DEFAULT 0
	)`,
}

// mailStmts are the writer's statements for mailboxes.
type mailStmts struct {
	stored, next, insert, ack, wake, wakeIdle *sql.Stmt
}

// mailStmts prepares the mailbox statements on first use.
func (w *writer) mailStmts() (*mailStmts, error) {
	if w.mail != nil {
		return w.mail, nil
	}
	m := &mailStmts{}
	for _, p := range []struct {
		s **sql.Stmt
		q string
	}{
		{&m.stored, `SELECT seq, sender, type, request_id, reply_to, content, parts, time FROM mail WHERE rid = ? AND id = ?`},
		{&m.next, `INSERT INTO mailboxes (rid, last) VALUES (?, 1)
			ON CONFLICT (rid) DO UPDATE SET last = last + 1 RETURNING last`},
		{&m.insert, `INSERT INTO mail (rid, seq, id, sender, type, request_id, reply_to, content, parts, time, woke)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING mid`},
		// Forward only, and never past the last mail.
		{&m.ack, `UPDATE mailboxes SET acked = min(?1, last) WHERE rid = ?2 AND acked < ?1`},
		// Only a run that waits for mail (store.WaitsForMail).
		{&m.wake, `UPDATE runs SET state = 'running', owner = '', lease_until = 0, updated_at = ?1
			WHERE rid = ?2 AND state = 'paused' AND reason = ?3`},
		// A run going idle with mail unread (posted while it worked).
		{&m.wakeIdle, `UPDATE runs SET state = 'running', owner = '', lease_until = 0
			WHERE id = ?1 AND state = 'paused' AND reason = ?2
			AND EXISTS (SELECT 1 FROM mailboxes b WHERE b.rid = runs.rid AND b.last > b.acked)`},
	} {
		st, err := w.conn.PrepareContext(context.Background(), p.q)
		if err != nil {
			return nil, fmt.Errorf("prepare %q: %w", p.q, err)
		}
		*p.s = st
		w.all = append(w.all, st)
	}
	w.mail = m
	return m, nil
}

// ackMail advances run rid's mailbox cursor to seq; Append calls it after
// the lease check, in the append's savepoint.
func (w *writer) ackMail(rid, seq int64) error {
	st, err := w.mailStmts()
	if err != nil {
		return err
	}
	_, err = st.ack.Exec(seq, rid)
	return err
}

// wakeIdle makes run id, which the append in progress paused for mail,
// runnable when its mailbox holds mail it has not acknowledged: a mail
// posted while it worked did not wake it, and nothing else would.
func (w *writer) wakeIdle(id string) (bool, error) {
	st, err := w.mailStmts()
	if err != nil {
		return false, err
	}
	res, err := st.wakeIdle.Exec(id, store.AwaitingMail)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// posted is the outcome of a post for one recipient.
type posted struct {
	mail store.Mail
	mid  int64 // 0 if the mailbox held the mail already
	woke bool
}

// post checks every recipient, then appends m to each mailbox that does
// not hold its ID yet, waking the recipients that wait for mail.
func (w *writer) post(to []string, m store.Mail, out []posted) error {
	curs := make([]lease, len(to))
	for i, id := range to {
		cur, err := w.lease(id)
		if err != nil {
			return err
		}
		if cur.state.Terminal() {
			return fmt.Errorf("run %q in state %s: %w", id, cur.state, store.ErrInvalidState)
		}
		curs[i] = cur
	}
	st, err := w.mailStmts()
	if err != nil {
		return err
	}
	parts, err := store.EncodeParts(m.Parts)
	if err != nil {
		return err
	}
	now := sqlval.Nanos(w.now)
	for i, cur := range curs {
		got := store.Mail{ID: m.ID}
		var (
			t    int64
			have string
		)
		err := st.stored.QueryRow(cur.rid, m.ID).Scan(&got.Seq, &got.From, &got.Type, &got.RequestID, &got.ReplyTo, &got.Content, &have, &t)
		if err == nil {
			got.Time = sqlval.FromNanos(t)
			if got.Parts, err = store.DecodeParts(have); err != nil {
				return err
			}
			out[i] = posted{mail: got}
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		p := posted{mail: m}
		if err := st.next.QueryRow(cur.rid).Scan(&p.mail.Seq); err != nil {
			return err
		}
		if p.woke, err = w.deliverMail(st, cur); err != nil {
			return err
		}
		if err := st.insert.QueryRow(cur.rid, p.mail.Seq, m.ID, m.From, m.Type, m.RequestID, m.ReplyTo, m.Content,
			parts, now, p.woke).Scan(&p.mid); err != nil {
			return err
		}
		p.mail.Time = sqlval.FromNanos(now)
		out[i] = p
	}
	return nil
}

// deliverMail notes that a mail reached run cur now and, if the run waits
// for mail, makes it Running and unowned (runnable), which it reports.
func (w *writer) deliverMail(st *mailStmts, cur lease) (woke bool, err error) {
	if cur.state == store.Paused {
		res, err := st.wake.Exec(sqlval.Nanos(w.now), cur.rid, store.AwaitingMail)
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err == nil, err
		}
	}
	_, err = w.setUpd.Exec(sqlval.Nanos(w.now), cur.rid)
	return false, err
}

// Post implements store.Mailboxes: one write request, so one transaction.
func (s *Store) Post(ctx context.Context, to []string, m store.Mail) ([]store.Mail, error) {
	if err := store.CheckMail(to, m); err != nil {
		return nil, err
	}
	out := make([]posted, len(to))
	err := s.write(ctx, func(w *writer) error {
		if err := w.post(to, m, out); err != nil {
			return err
		}
		// Before the commit, so that the poller never sees a mail
		// without knowing that Post publishes it.
		for _, p := range out {
			if p.mid != 0 && s.polling.Load() {
				s.ownMail.add(p.mid)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("post mail %q: %w", m.ID, err)
	}
	mails := make([]store.Mail, len(to))
	for i, p := range out {
		mails[i] = p.mail
		if p.mid != 0 {
			s.hub.PublishSend(to[i], p.woke)
		}
	}
	return mails, nil
}

// mailboxQuery reads a run's cursor and the mails after it in one
// statement, so that both come from one snapshot; a run without mail
// gives one row of NULL mail columns.
const mailboxQuery = `SELECT coalesce(b.acked, 0), m.seq, m.id, m.sender, m.type, m.request_id, m.reply_to, m.content, m.parts, m.time
	FROM runs r
	LEFT JOIN mailboxes b ON b.rid = r.rid
	LEFT JOIN mail m ON m.rid = r.rid AND m.seq > coalesce(b.acked, 0)
	WHERE r.id = ? ORDER BY m.seq LIMIT ?`

// Mailbox implements store.Mailboxes.
func (s *Store) Mailbox(ctx context.Context, id string, limit int) ([]store.Mail, int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	lim := int64(limit)
	if lim <= 0 {
		lim = -1
	}
	rows, err := s.rdb.QueryContext(ctx, mailboxQuery, id, lim)
	if err != nil {
		return nil, 0, fmt.Errorf("mailbox of run %q: %w", id, err)
	}
	defer rows.Close()
	var (
		cursor int64
		found  bool
	)
	out := []store.Mail{}
	for rows.Next() {
		found = true
		var (
			seq, t                                         sql.NullInt64
			mid, from, typ, reqID, replyTo, content, parts sql.NullString
		)
		if err := rows.Scan(&cursor, &seq, &mid, &from, &typ, &reqID, &replyTo, &content, &parts, &t); err != nil {
			return nil, 0, fmt.Errorf("mailbox of run %q: %w", id, err)
		}
		if !seq.Valid {
			continue // no mail after the cursor
		}
		ps, err := store.DecodeParts(parts.String)
		if err != nil {
			return nil, 0, fmt.Errorf("mailbox of run %q: mail %s: %w", id, mid.String, err)
		}
		out = append(out, store.Mail{Seq: seq.Int64, ID: mid.String, From: from.String, Type: typ.String,
			RequestID: reqID.String, ReplyTo: replyTo.String, Content: content.String, Parts: ps, Time: sqlval.FromNanos(t.Int64)})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("mailbox of run %q: %w", id, err)
	}
	if !found {
		return nil, 0, fmt.Errorf("mailbox: run %q: %w", id, store.ErrNotFound)
	}
	return out, cursor, nil
}

// lastMailQuery gives the mid of the newest mail, 0 if none.
const lastMailQuery = `SELECT coalesce(max(mid), 0) FROM mail`

// newMailQuery lists the mails after a mid, with their runs.
const newMailQuery = `SELECT mail.mid, runs.id, mail.woke FROM mail JOIN runs ON runs.rid = mail.rid
	WHERE mail.mid > ? ORDER BY mail.mid LIMIT 1000`

// pollMail publishes a ChangeInbox (and, for a mail that woke its run, a
// ChangeRunnable) for each mail committed after mid last by another
// process, and returns the last mid seen.
func (s *Store) pollMail(last int64) int64 {
	type mail struct {
		mid  int64
		run  string
		woke bool
	}
	var batch []mail
	rows, err := s.rdb.Query(newMailQuery, last)
	if err != nil {
		return last // a busy or closing database: try again next tick
	}
	for rows.Next() {
		var m mail
		if err := rows.Scan(&m.mid, &m.run, &m.woke); err != nil {
			break
		}
		batch = append(batch, m)
	}
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		return last
	}
	for _, m := range batch {
		last = max(last, m.mid)
		if s.ownMail.took(m.mid, last) {
			continue // Post has published it
		}
		s.hub.PublishSend(m.run, m.woke)
	}
	return last
}
