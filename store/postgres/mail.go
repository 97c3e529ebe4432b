package postgres

import (
	"context"
	"errors"
	"fmt"

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

// postSQL posts mail $2 (ID; $3..$7 the other fields) to the runs named
// $1 in one statement, hence one transaction. It locks the recipients'
// rows in rid order (posts to overlapping sets of runs cannot deadlock,
// and a post and a pause of one run are serialized), and only when it
// finds them all and none is finished does it add the mail to each
// mailbox that lacks its ID, numbered after the mailbox's last mail, and
// deliver it (the step a Send takes, waking only the runs that wait for
// mail: paused with reason $8, store.AwaitingMail, as read under the
// lock). It returns a row per run found: its state, whether the mail is
// new there, the mail as stored, and the payloads that announce the
// delivery (see notify.go). A concurrent post of the same ID
// that this statement's snapshot misses fails it on swarm_mail_id; run
// again, it finds that mail.
func postSQL(deliver func(src string) string) string {
	return `WITH rc AS (SELECT rid, id, state, reason FROM swarm_runs WHERE id = ANY($1::text[]) ORDER BY rid FOR UPDATE),
	ok AS (SELECT count(*) = cardinality($1::text[])
			AND coalesce(bool_and(state NOT IN ('completed', 'failed', 'stopped')), false) AS ok FROM rc),
	e AS (SELECT rid, seq, sender, type, request_id, reply_to, content, parts, time
		FROM swarm_mail WHERE rid IN (SELECT rid FROM rc) AND id = $2),
	t AS (SELECT ` + nowNS + ` AS now),
	b AS (INSERT INTO swarm_mailboxes AS mb (rid, last)
		SELECT rc.rid, 1 FROM rc, ok WHERE ok.ok AND rc.rid NOT IN (SELECT rid FROM e)
		ON CONFLICT (rid) DO UPDATE SET last = mb.last + 1
		RETURNING rid, last),
	n AS (INSERT INTO swarm_mail (rid, seq, id, sender, type, request_id, reply_to, content, parts, time)
		SELECT b.rid, b.last, $2, $3, $4, $5, $6, $7, $9, t.now FROM b, t
		RETURNING rid, seq, sender, type, request_id, reply_to, content, parts, time),
	d AS (` + deliver(`SELECT rc.rid, rc.state = 'paused' AND rc.reason = $8 AS wake FROM rc JOIN n ON n.rid = rc.rid`) + `)
	SELECT rc.id, rc.state, n.rid IS NOT NULL, coalesce(n.seq, e.seq), coalesce(n.sender, e.sender),
		coalesce(n.type, e.type), coalesce(n.request_id, e.request_id), coalesce(n.reply_to, e.reply_to),
		coalesce(n.content, e.content), coalesce(n.parts, e.parts), coalesce(n.time, e.time), d.inbox, d.runnable
	FROM rc LEFT JOIN n ON n.rid = rc.rid LEFT JOIN e ON e.rid = rc.rid LEFT JOIN d ON d.rid = rc.rid`
}

// mailboxSQL reads a run's cursor and up to $2 mails after it in one
// statement; a run without mail gives one row of NULL mail columns.
const mailboxSQL = `SELECT coalesce(b.acked, 0), m.seq, m.id, m.sender, m.type, m.request_id, m.reply_to, m.content, m.parts, m.time
	FROM swarm_runs r
	LEFT JOIN swarm_mailboxes b ON b.rid = r.rid
	LEFT JOIN LATERAL (SELECT seq, id, sender, type, request_id, reply_to, content, parts, time FROM swarm_mail
		WHERE rid = r.rid AND seq > coalesce(b.acked, 0) ORDER BY seq LIMIT $2) m ON true
	WHERE r.id = $1 ORDER BY m.seq`

// Post implements store.Mailboxes in one statement: the mails and the
// waking of the recipients that wait for mail commit together, and are
// announced after the commit. A post broken off with its connection, or that raced with a post of the
// same ID, is tried once more: posting an ID twice delivers it once.
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
	parts, err := store.EncodeParts(m.Parts)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q.post, to, m.ID, m.From, m.Type, m.RequestID, m.ReplyTo, m.Content, store.AwaitingMail, parts)
	if err != nil {
		return nil, err
	}
	type result struct {
		state string
		isNew bool
		mail  store.Mail
		time  *int64
	}
	byID := make(map[string]result, len(to))
	var (
		id                                 string
		r                                  result
		seq                                *int64
		from, typ, reqID, replyTo, content *string
		have                               *string
		inbox, runs                        *string
		announced                          []*string
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &r.state, &r.isNew, &seq, &from, &typ, &reqID, &replyTo, &content, &have, &r.time, &inbox, &runs}, func() error {
		announced = append(announced, inbox, runs)
		if seq != nil {
			ps, err := store.DecodeParts(*have)
			if err != nil {
				return err
			}
			r.mail = store.Mail{Seq: *seq, ID: m.ID, From: *from, Type: *typ, RequestID: *reqID, ReplyTo: *replyTo,
				Content: *content, Parts: ps, Time: sqlval.FromNanos(*r.time)}
		}
		byID[id] = r
		r = result{}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.announce(announced...)
	for _, id := range to {
		r, ok := byID[id]
		switch {
		case !ok:
			return nil, fmt.Errorf("run %q: %w", id, store.ErrNotFound)
		case store.State(r.state).Terminal():
			return nil, fmt.Errorf("run %q in state %s: %w", id, r.state, store.ErrInvalidState)
		}
	}
	out := make([]store.Mail, len(to))
	for i, id := range to {
		if out[i] = byID[id].mail; out[i].Seq == 0 {
			return nil, fmt.Errorf("run %q: the post returned no mail", id)
		}
	}
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
	var lim any
	if limit > 0 {
		lim = limit
	}
	rows, err := s.pool.Query(ctx, mailboxSQL, id, lim)
	if err != nil {
		return nil, 0, s.wrap("mailbox of run "+id, err)
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
			seq, t                                  *int64
			mid, from, typ, reqID, replyTo, content *string
			have                                    *string
		)
		if err := rows.Scan(&cursor, &seq, &mid, &from, &typ, &reqID, &replyTo, &content, &have, &t); err != nil {
			return nil, 0, s.wrap("mailbox of run "+id, err)
		}
		if seq == nil {
			continue // no mail after the cursor
		}
		ps, err := store.DecodeParts(*have)
		if err != nil {
			return nil, 0, fmt.Errorf("mailbox of run %s: mail %s: %w", id, *mid, err)
		}
		out = append(out, store.Mail{Seq: *seq, ID: *mid, From: *from, Type: *typ, RequestID: *reqID,
			ReplyTo: *replyTo, Content: *content, Parts: ps, Time: sqlval.FromNanos(*t)})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.wrap("mailbox of run "+id, err)
	}
	if !found {
		return nil, 0, fmt.Errorf("mailbox: run %q: %w", id, store.ErrNotFound)
	}
	return out, cursor, nil
}
