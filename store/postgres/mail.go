package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Mailboxes = (*Store)(nil)

// ackMailSQL advances the mailbox cursor of the run an append updated (CTE
// u) to argument $n: forward only, never past the last mail, and not at
// all when the lease check left u empty.
func ackMailSQL(n int) string {
	return fmt.Sprintf(`UPDATE swarm_mailboxes SET acked = least($%[1]d::bigint, last)
		WHERE $%[1]d::bigint > 0 AND rid IN (SELECT rid FROM u) AND acked < $%[1]d::bigint`, n)
}

// stageSQL is a post's first step (see migration 0014): it finds the
// recipients named $1 and, only when it finds them all and none is
// finished, stages mail $2 ($3..$7 the other fields) for each that lacks a
// mail of that ID, in one statement that locks no row, so that concurrent
// posts to one mailbox commit together. It returns a row per run found:
// its id, rid and state. It commits without waiting for the WAL flush:
// the mail is in no mailbox yet (no reader sees it), and the numbering
// transaction that puts it there commits synchronously after it, which
// flushes the WAL up to and past this commit, so a post that returns has
// its mail durable as before; a crash in between loses only mails whose
// posts had not returned.
const stageSQL = `WITH rc AS (SELECT rid, id, state FROM swarm_runs WHERE id = ANY($1::text[])),
	ok AS (SELECT count(*) = cardinality($1::text[])
			AND coalesce(bool_and(state NOT IN ('completed', 'failed', 'stopped')), false) AS ok FROM rc),
	st AS (INSERT INTO swarm_mail_staged (rid, id, sender, type, request_id, reply_to, content, time)
		SELECT rc.rid, $2, $3, $4, $5, $6, $7, t.now FROM rc, ok, (SELECT ` + nowNS + ` AS now) t
		WHERE ok.ok AND NOT EXISTS (SELECT 1 FROM swarm_mail m WHERE m.rid = rc.rid AND m.id = $2))
	SELECT id, rid, state FROM rc, (SELECT set_config('synchronous_commit', 'off', true)) c`

// mailLockSQL takes the advisory lock of each mailbox of the runs named $1, in
// rid order (posts to overlapping sets of runs cannot deadlock), until the
// transaction ends.
var mailLockSQL = fmt.Sprintf(`SELECT count(*) FROM (SELECT pg_advisory_xact_lock(%d, hashtext(coalesce(current_schema(), '') || ' mail ' || r::text))
	FROM (SELECT DISTINCT rid AS r FROM swarm_runs WHERE id = ANY($1::text[]) ORDER BY r OFFSET 0) x) y`, mailLock)

// mailLock is the first key of the mailboxes' advisory locks.
const mailLock = 0x53574d42 // "SWMB"

// numberSQL is a post's second step, run under the mailboxes' locks
// (mailLockSQL) for the runs named $1: it numbers every mail staged for them so
// far, in staging order, after each mailbox's last mail (a mail whose ID
// the mailbox has, or that was staged twice, once), and delivers the new
// ones (the step a Send takes, waking only the runs that wait for mail:
// paused with reason $2, store.AwaitingMail, as read under the lock of
// their rows, taken before their mailboxes' rows as an append takes them).
// It returns the payloads that announce the deliveries (see notify.go).
func numberSQL(deliver func(src string) string) string {
	return `WITH s AS (DELETE FROM swarm_mail_staged WHERE rid IN (SELECT rid FROM swarm_runs WHERE id = ANY($1::text[]))
			RETURNING sid, rid, id, sender, type, request_id, reply_to, content, time),
	rc AS (SELECT rid, state, reason FROM swarm_runs WHERE rid IN (SELECT rid FROM s) ORDER BY rid FOR UPDATE),
	u AS (SELECT DISTINCT ON (s.rid, s.id) s.* FROM s JOIN rc ON rc.rid = s.rid
		WHERE NOT EXISTS (SELECT 1 FROM swarm_mail m WHERE m.rid = s.rid AND m.id = s.id)
		ORDER BY s.rid, s.id, s.sid),
	num AS (SELECT u.*, row_number() OVER (PARTITION BY u.rid ORDER BY u.sid) AS k,
			count(*) OVER (PARTITION BY u.rid) AS n FROM u),
	b AS (INSERT INTO swarm_mailboxes AS mb (rid, last) SELECT DISTINCT rid, n FROM num
		ON CONFLICT (rid) DO UPDATE SET last = mb.last + EXCLUDED.last
		RETURNING rid, last),
	ins AS (INSERT INTO swarm_mail (rid, seq, id, sender, type, request_id, reply_to, content, time)
		SELECT num.rid, b.last - num.n + num.k, num.id, num.sender, num.type, num.request_id, num.reply_to, num.content, num.time
		FROM num JOIN b ON b.rid = num.rid),
	d AS (` + deliver(`SELECT rc.rid, rc.state = 'paused' AND rc.reason = $2 AS wake FROM rc WHERE rc.rid IN (SELECT rid FROM num)`) + `)
	SELECT inbox, runnable FROM d`
}

// postedSQL reads mail $2 of the runs named $1, after numberSQL.
const postedSQL = `SELECT r.id, m.seq, m.sender, m.type, m.request_id, m.reply_to, m.content, m.time
	FROM swarm_runs r JOIN swarm_mail m ON m.rid = r.rid AND m.id = $2 WHERE r.id = ANY($1::text[])`

// staleStaged is how long a mail may stay staged before a read of its
// mailbox numbers it: its poster died between the two steps.
const staleStaged = 5 * time.Second

// mailboxSQL reads a run's cursor and up to $2 mails after it in one
// statement, with the run's rid and whether a mail staged for it more
// than $3 ns ago waits to be numbered; a run without mail gives one row of
// NULL mail columns.
const mailboxSQL = `SELECT coalesce(b.acked, 0), m.seq, m.id, m.sender, m.type, m.request_id, m.reply_to, m.content, m.time,
		r.rid, EXISTS (SELECT 1 FROM swarm_mail_staged st WHERE st.rid = r.rid AND st.time < ` + nowNS + ` - $3::bigint)
	FROM swarm_runs r
	LEFT JOIN swarm_mailboxes b ON b.rid = r.rid
	LEFT JOIN LATERAL (SELECT seq, id, sender, type, request_id, reply_to, content, time FROM swarm_mail
		WHERE rid = r.rid AND seq > coalesce(b.acked, 0) ORDER BY seq LIMIT $2) m ON true
	WHERE r.id = $1 ORDER BY m.seq`

// Post implements store.Mailboxes in two steps (see migration 0014): the
// mail is staged, then numbered with the mails staged for the same
// mailboxes meanwhile, in one transaction that delivers them and wakes the
// recipients that wait for mail; Post returns after that commit, and
// after the deliveries are announced. A post broken off with its
// connection, or that raced with a post of the same ID, is tried once
// more: posting an ID twice delivers it once.
func (s *Store) Post(ctx context.Context, to []string, m store.Mail) ([]store.Mail, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := store.CheckMail(to, m); err != nil {
		return nil, err
	}
	out, err := s.post(ctx, to, m)
	if err != nil && (unavailable(err) || sameID(err)) && ctx.Err() == nil {
		out, err = s.post(ctx, to, m)
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidState) {
		return nil, fmt.Errorf("post mail %q: %w", m.ID, err)
	}
	if err != nil {
		return nil, s.wrap("post mail "+m.ID, err)
	}
	return out, nil
}

// sameID reports whether err is a violation of the uniqueness of mail IDs
// per mailbox.
func sameID(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "swarm_mail_id"
}

func (s *Store) post(ctx context.Context, to []string, m store.Mail) ([]store.Mail, error) {
	var states map[string]string
	mails, err := s.number(ctx, to, m, func(rows pgx.Rows) error {
		var id, state string
		var rid int64
		states = make(map[string]string, len(to))
		_, err := pgx.ForEachRow(rows, []any{&id, &rid, &state}, func() error {
			states[id] = state
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, id := range to {
		st, ok := states[id]
		switch {
		case !ok:
			return nil, fmt.Errorf("run %q: %w", id, store.ErrNotFound)
		case store.State(st).Terminal():
			return nil, fmt.Errorf("run %q in state %s: %w", id, st, store.ErrInvalidState)
		}
	}
	out := make([]store.Mail, len(to))
	for i, id := range to {
		if out[i] = mails[id]; out[i].Seq == 0 {
			return nil, fmt.Errorf("run %q: the post returned no mail", id)
		}
	}
	return out, nil
}

// number runs a post's two steps for the runs named to in one round trip:
// when staged is not nil, the staging of m (stageSQL, whose rows staged
// reads) in a transaction of its own; then, in another, the numbering
// (numberSQL) of every mail staged for their mailboxes, and the reading of
// mail m.ID of each, which it returns by run id. When staged is nil it
// only numbers.
func (s *Store) number(ctx context.Context, to []string, m store.Mail, staged func(pgx.Rows) error) (map[string]store.Mail, error) {
	b := &pgx.Batch{}
	if staged != nil {
		b.Queue("BEGIN")
		b.Queue(stageSQL, to, m.ID, m.From, m.Type, m.RequestID, m.ReplyTo, m.Content)
		b.Queue("COMMIT")
	}
	b.Queue("BEGIN")
	b.Queue(mailLockSQL, to)
	b.Queue(s.q.number, to, store.AwaitingMail)
	b.Queue(postedSQL, to, m.ID)
	b.Queue("COMMIT")
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if staged != nil {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		if err := staged(rows); err != nil {
			return nil, err
		}
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	var (
		inbox, runs *string
		announced   []*string
	)
	if _, err := pgx.ForEachRow(rows, []any{&inbox, &runs}, func() error {
		announced = append(announced, inbox, runs)
		return nil
	}); err != nil {
		return nil, err
	}
	rows, err = br.Query()
	if err != nil {
		return nil, err
	}
	out := map[string]store.Mail{}
	var (
		run string
		ml  store.Mail
		t   int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&run, &ml.Seq, &ml.From, &ml.Type, &ml.RequestID, &ml.ReplyTo, &ml.Content, &t}, func() error {
		ml.ID, ml.Time = m.ID, sqlval.FromNanos(t)
		out[run] = ml
		return nil
	}); err != nil {
		return nil, err
	}
	if _, err := br.Exec(); err != nil { // COMMIT
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, err
	}
	s.announce(announced...)
	return out, nil
}

// Mailbox implements store.Mailboxes. It is tried once more when its
// connection turns out broken.
func (s *Store) Mailbox(ctx context.Context, id string, limit int) ([]store.Mail, int64, error) {
	type box struct {
		mails  []store.Mail
		cursor int64
	}
	b, err := again(ctx, func() (box, error) {
		ms, cur, err := s.mailbox(ctx, id, limit)
		return box{ms, cur}, err
	})
	return b.mails, b.cursor, err
}

func (s *Store) mailbox(ctx context.Context, id string, limit int) ([]store.Mail, int64, error) {
	if err := s.check(); err != nil {
		return nil, 0, err
	}
	out, cursor, _, stale, err := s.readMailbox(ctx, id, limit)
	if err == nil && stale {
		// A poster died between its two steps: number its mail.
		if _, err := s.number(ctx, []string{id}, store.Mail{}, nil); err != nil {
			return nil, 0, s.wrap("mailbox of run "+id, err)
		}
		out, cursor, _, _, err = s.readMailbox(ctx, id, limit)
	}
	return out, cursor, err
}

// readMailbox reads run id's mailbox, and its rid and whether a mail
// waits in staging longer than a post takes.
func (s *Store) readMailbox(ctx context.Context, id string, limit int) (out []store.Mail, cursor, rid int64, stale bool, err error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	rows, err := s.pool.Query(ctx, mailboxSQL, id, lim, int64(staleStaged))
	if err != nil {
		return nil, 0, 0, false, s.wrap("mailbox of run "+id, err)
	}
	defer rows.Close()
	found := false
	out = []store.Mail{}
	for rows.Next() {
		found = true
		var (
			seq, t                                  *int64
			mid, from, typ, reqID, replyTo, content *string
		)
		if err := rows.Scan(&cursor, &seq, &mid, &from, &typ, &reqID, &replyTo, &content, &t, &rid, &stale); err != nil {
			return nil, 0, 0, false, s.wrap("mailbox of run "+id, err)
		}
		if seq == nil {
			continue // no mail after the cursor
		}
		out = append(out, store.Mail{Seq: *seq, ID: *mid, From: *from, Type: *typ, RequestID: *reqID,
			ReplyTo: *replyTo, Content: *content, Time: sqlval.FromNanos(*t)})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, false, s.wrap("mailbox of run "+id, err)
	}
	if !found {
		return nil, 0, 0, false, fmt.Errorf("mailbox: run %q: %w", id, store.ErrNotFound)
	}
	return out, cursor, rid, stale, nil
}
