package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

// readStmts are the prepared statements of the read pool.
type readStmts struct {
	get, records, inbox, exists, newMessages, lastMessage *sql.Stmt
}

// readQuery reads a run's records after a seq: a range of the journal's
// pos (journalPos), in order.
const readQuery = `SELECT j.seq, j.key, j.type, j.data, j.time FROM runs, journal j
	WHERE runs.id = ? AND j.pos > (runs.rid << 24) + min(max(?, 0), 16777215) AND j.pos <= (runs.rid << 24) + 16777215
	ORDER BY j.pos LIMIT ?`

const runCols = `id, swarm, parent, state, turn, max_turns, agent, result, reason, usage,
	owner, epoch, lease_until, last_seq, created_at, updated_at`

func (r *readStmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		s **sql.Stmt
		q string
	}{
		{&r.get, `SELECT ` + runCols + ` FROM runs WHERE id = ?`},
		{&r.records, readQuery},
		{&r.inbox, `SELECT id, kind, text, time, parts FROM inbox
			WHERE rid = (SELECT rid FROM runs WHERE id = ?) ORDER BY id`},
		{&r.exists, `SELECT 1 FROM runs WHERE id = ?`},
		{&r.newMessages, newMessagesQuery},
		{&r.lastMessage, lastMessageQuery},
	} {
		st, err := db.PrepareContext(ctx, p.q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.q, err)
		}
		*p.s = st
	}
	return nil
}

func (r *readStmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{r.get, r.records, r.inbox, r.exists, r.newMessages, r.lastMessage} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (store.Run, error) {
	var (
		r                   store.Run
		state               string
		result              []byte
		usage               sql.NullString
		lease, created, upd int64
	)
	err := sc.Scan(&r.ID, &r.Swarm, &r.Parent, &state, &r.Turn, &r.MaxTurns, &r.Agent, &result, &r.Reason, &usage,
		&r.Owner, &r.Epoch, &lease, &r.LastSeq, &created, &upd)
	if err != nil {
		return store.Run{}, err
	}
	r.State = store.State(state)
	if len(result) > 0 {
		r.Result = json.RawMessage(result)
	}
	if usage.Valid && usage.String != "" {
		if err := json.Unmarshal([]byte(usage.String), &r.Usage); err != nil {
			return store.Run{}, fmt.Errorf("run %q: decode usage: %w", r.ID, err)
		}
	}
	r.LeaseUntil = sqlval.FromNanos(lease)
	r.CreatedAt = sqlval.FromNanos(created)
	r.UpdatedAt = sqlval.FromNanos(upd)
	return r, nil
}

func (s *Store) checkOpen() error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, r store.Run, owner string, lease time.Duration, records []store.Record) (store.Lease, error) {
	l, _, err := s.CreateReserving(ctx, r, owner, lease, records, store.Pool{})
	return l, err
}

// CreateReserving implements store.Reserver: the pool is set by the insert
// of the run's row.
func (s *Store) CreateReserving(ctx context.Context, r store.Run, owner string, lease time.Duration, records []store.Record, d store.Pool) (store.Lease, store.Pool, error) {
	if r.ID == "" {
		return store.Lease{}, store.Pool{}, errors.New("create run: empty id")
	}
	if err := store.CheckKeys(r.ID, records); err != nil {
		return store.Lease{}, store.Pool{}, fmt.Errorf("create run: %w", err)
	}
	if err := store.CheckSpend(r.ID, d); err != nil {
		return store.Lease{}, store.Pool{}, fmt.Errorf("create run: %w", err)
	}
	if err := store.CheckRunBlobs(r.ID, r.Blobs); err != nil {
		return store.Lease{}, store.Pool{}, err
	}
	p := store.Pool{Calls: max(d.Calls, 0), Tools: max(d.Tools, 0), Tokens: d.Tokens, Cost: d.Cost, Lifted: d.Lifted}
	err := s.write(ctx, func(w *writer) error {
		rid, err := w.create(&r, owner, lease, records, &p)
		for _, b := range r.Blobs {
			if err != nil {
				break
			}
			err = w.putBlob(ctx, rid, b)
		}
		return err
	})
	if err != nil {
		return store.Lease{}, store.Pool{}, fmt.Errorf("create run: %w", err)
	}
	s.hub.PublishCreate(r.ID, owner)
	return store.Lease{RunID: r.ID, Owner: owner, Epoch: 1}, p, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Run, error) {
	if err := s.checkOpen(); err != nil {
		return store.Run{}, err
	}
	r, err := scanRun(s.rd.get.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, fmt.Errorf("get run %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("get run %q: %w", id, err)
	}
	return r, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, f store.Filter) ([]store.Run, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	q, args := listQuery(f)
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	out := []store.Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// listQuery is List's query for f and its arguments. Each filter has an
// index in rid order (runs_swarm, runs_state, runs_parent: SQLite indexes
// end with the rowid), so that newest first needs no sort (see
// TestQueryPlans).
func listQuery(f store.Filter) (string, []any) {
	where, args := sqlval.Where(f, "runs", func(int) string { return "?" })
	limit := int64(f.Limit)
	if limit <= 0 {
		limit = -1
	}
	return "SELECT " + runCols + " FROM runs" + where + " ORDER BY rid DESC LIMIT ? OFFSET ?", append(args, limit, max(f.Offset, 0))
}

// Read implements store.Store.
func (s *Store) Read(ctx context.Context, id string, after int64, limit int) ([]store.Record, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	lim := int64(limit)
	if lim <= 0 {
		lim = -1
	}
	rows, err := s.rd.records.QueryContext(ctx, id, after, lim)
	if err != nil {
		return nil, fmt.Errorf("read run %q: %w", id, err)
	}
	defer rows.Close()
	out := []store.Record{}
	for rows.Next() {
		var (
			r    store.Record
			data []byte
			t    int64
		)
		if err := rows.Scan(&r.Seq, &r.Key, &r.Type, &data, &t); err != nil {
			return nil, fmt.Errorf("read run %q: %w", id, err)
		}
		if len(data) > 0 {
			r.Data = json.RawMessage(data)
		}
		r.Time = sqlval.FromNanos(t)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read run %q: %w", id, err)
	}
	if len(out) == 0 {
		if err := s.exists(ctx, id); err != nil {
			return nil, fmt.Errorf("read run: %w", err)
		}
	}
	return out, nil
}

func (s *Store) exists(ctx context.Context, id string) error {
	var one int
	err := s.rd.exists.QueryRowContext(ctx, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %q: %w", id, store.ErrNotFound)
	}
	return err
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, l store.Lease, records []store.Record, u store.Update) (int64, error) {
	if u.State != "" && !u.State.Valid() {
		return 0, fmt.Errorf("append to run %q: invalid state %q", l.RunID, u.State)
	}
	if err := store.CheckKeys(l.RunID, records); err != nil {
		return 0, fmt.Errorf("append: %w", err)
	}
	usage, err := sqlval.UsageJSON(u.Usage)
	if err != nil {
		return 0, fmt.Errorf("append to run %q: %w", l.RunID, err)
	}
	var (
		last int64
		woke bool
	)
	err = s.write(ctx, func(w *writer) (err error) {
		last, woke, err = w.append(l, records, &u, usage)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("append: %w", err)
	}
	s.hub.PublishAppend(l.RunID, u)
	if woke {
		s.hub.Publish(store.Change{RunID: l.RunID, Kind: store.ChangeRunnable})
	}
	return last, nil
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, id, owner string, lease time.Duration) (store.Lease, error) {
	if owner == "" {
		return store.Lease{}, fmt.Errorf("claim run %q: empty owner", id)
	}
	var l store.Lease
	err := s.write(ctx, func(w *writer) (err error) {
		l, err = w.claimOne(id, owner, lease)
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("claim: %w", err)
	}
	return l, nil
}

// ClaimExpired implements store.Store. A limit <= 0 means no limit.
func (s *Store) ClaimExpired(ctx context.Context, owner string, lease time.Duration, limit int) ([]store.Lease, error) {
	if owner == "" {
		return nil, errors.New("claim expired runs: empty owner")
	}
	var ls []store.Lease
	err := s.write(ctx, func(w *writer) (err error) {
		ls, err = w.claimExpired(owner, lease, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim expired runs: %w", err)
	}
	return ls, nil
}

// Renew implements store.Store.
func (s *Store) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if owner == "" {
		return store.Renewal{}, s.checkOpen()
	}
	var rn store.Renewal
	err := s.write(ctx, func(w *writer) (err error) {
		rn, err = w.renewAll(owner, lease)
		return err
	})
	if err != nil {
		return store.Renewal{}, fmt.Errorf("renew leases of %q: %w", owner, err)
	}
	slices.Sort(rn.Pending)
	return rn, nil
}

// Release implements store.Store. Releasing a lease that is no longer
// current fails with store.ErrLeaseLost and changes nothing.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	err := s.write(ctx, func(w *writer) error { return w.releaseOne(l) })
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	s.hub.Publish(store.Change{RunID: l.RunID, Kind: store.ChangeRunnable})
	return nil
}

// Send implements store.Store. The store assigns m.ID, and m.Time when it is
// zero.
func (s *Store) Send(ctx context.Context, id string, m store.Message) (store.Message, error) {
	if err := store.CheckMessage(id, m); err != nil {
		return store.Message{}, err
	}
	parts, err := store.EncodeParts(m.Parts)
	if err != nil {
		return store.Message{}, fmt.Errorf("send to run %q: %w", id, err)
	}
	woke := false
	err = s.write(ctx, func(w *writer) error {
		if err := w.send(id, &m, parts, &woke); err != nil {
			return err
		}
		// Before the commit, so that the inbox poller never sees the
		// message without knowing that Send publishes it.
		s.noteSent(m.ID)
		return nil
	})
	if err != nil {
		return store.Message{}, fmt.Errorf("send: %w", err)
	}
	s.hub.PublishSend(id, woke)
	m.Time = sqlval.FromNanos(sqlval.Nanos(m.Time)) // as Inbox will return it
	return m, nil
}

// Inbox implements store.Store.
func (s *Store) Inbox(ctx context.Context, id string) ([]store.Message, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.rd.inbox.QueryContext(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("inbox of run %q: %w", id, err)
	}
	defer rows.Close()
	out := []store.Message{}
	for rows.Next() {
		var (
			m           store.Message
			kind, parts string
			t           int64
		)
		if err := rows.Scan(&m.ID, &kind, &m.Text, &t, &parts); err != nil {
			return nil, fmt.Errorf("inbox of run %q: %w", id, err)
		}
		if m.Parts, err = store.DecodeParts(parts); err != nil {
			return nil, fmt.Errorf("inbox of run %q: message %d: %w", id, m.ID, err)
		}
		m.Kind = store.MessageKind(kind)
		m.Time = sqlval.FromNanos(t)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("inbox of run %q: %w", id, err)
	}
	if len(out) == 0 {
		if err := s.exists(ctx, id); err != nil {
			return nil, fmt.Errorf("inbox: %w", err)
		}
	}
	return out, nil
}

// SchemaVersion returns the version of the database's schema.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var v string
	if err := s.rdb.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'schema_version'").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version of %s: %w", s.path, err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: bad schema version %q", s.path, v)
	}
	return n, nil
}
