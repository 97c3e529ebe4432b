package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

// writer holds the writer connection's prepared statements. Only the leader
// of the writes uses it (and Open, before any write).
type writer struct {
	now time.Time // set before each request

	begin, commit, rollback             *sql.Stmt
	savepoint, rollbackTo, release      *sql.Stmt
	insertRun, getLease                 *sql.Stmt
	setSeq, setRow, ackInbox, claim     *sql.Stmt
	expired, renew, held, releaseLease  *sql.Stmt
	exists, insertMessage, wake, setUpd *sql.Stmt
	keySeq                              *sql.Stmt
	spend                               *sql.Stmt    // prepared on first use
	mail                                *mailStmts   // prepared on first use
	team                                *teamStmts   // prepared on first use
	memory                              *memoryStmts // prepared on first use

	// insertN[n] inserts n records in one statement, prepared on
	// first use.
	insertN [maxRowsPerInsert + 1]*sql.Stmt
	args    []any

	conn *sql.Conn
	all  []*sql.Stmt
}

// expiredQuery finds claimable runs in runs_claim's order (lease expiry,
// 0 for unowned runs, then rid): only the runs whose lease ran out, without
// a sort. (runs_state would give running runs in rid order, but the idle
// poll would then walk every running run that another node holds.)
const expiredQuery = `SELECT rid, id, epoch, owner, lease_until FROM runs INDEXED BY runs_claim WHERE state = 'running' AND lease_until <= ?
	ORDER BY lease_until, rid LIMIT ?`

// renewStmt and heldQuery find a node's runs among the running runs
// (runs_claim): an index on owner would cost a page at every start and end
// of a run.
const (
	renewStmt = `UPDATE runs INDEXED BY runs_claim SET lease_until = ? WHERE owner = ? AND owner <> '' AND state = 'running'`
	heldQuery = `SELECT id, EXISTS (SELECT 1 FROM inbox WHERE inbox.rid = runs.rid)
			FROM runs INDEXED BY runs_claim WHERE owner = ? AND owner <> '' AND state = 'running' ORDER BY id`
)

// maxRowsPerInsert is the most records one INSERT statement adds.
const maxRowsPerInsert = 8

func prepareWriter(ctx context.Context, c *sql.Conn) (*writer, error) {
	w := &writer{conn: c}
	for _, p := range []struct {
		s **sql.Stmt
		q string
	}{
		{&w.begin, "BEGIN IMMEDIATE"},
		{&w.commit, "COMMIT"},
		{&w.rollback, "ROLLBACK"},
		{&w.savepoint, "SAVEPOINT req"},
		{&w.rollbackTo, "ROLLBACK TO req"},
		{&w.release, "RELEASE req"},
		{&w.insertRun, `INSERT INTO runs (id, swarm, parent, state, turn, max_turns, agent, result, reason, usage,
			owner, epoch, lease_until, last_seq, created_at, updated_at,
			pool_calls, pool_tools, pool_tokens, pool_cost, pool_lifted)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`},
		{&w.getLease, `SELECT rid, state, owner, epoch, lease_until, last_seq FROM runs WHERE id = ?`},
		// An append checks the lease and updates the row in one statement.
		// The common append changes neither state nor owner, so the
		// indexes on state, owner and lease_until are left alone.
		{&w.setSeq, `UPDATE runs SET last_seq = last_seq + ?, updated_at = ?,
			turn = coalesce(?, turn), max_turns = coalesce(?, max_turns), agent = coalesce(?, agent),
			result = coalesce(?, result), reason = coalesce(?, reason), usage = coalesce(?, usage)
			WHERE id = ? AND owner = ? AND owner <> '' AND epoch = ?
			RETURNING rid, last_seq`},
		{&w.setRow, `UPDATE runs SET last_seq = last_seq + ?, updated_at = ?,
			turn = coalesce(?, turn), max_turns = coalesce(?, max_turns), agent = coalesce(?, agent),
			result = coalesce(?, result), reason = coalesce(?, reason), usage = coalesce(?, usage),
			state = coalesce(?, state),
			owner = CASE WHEN ? THEN '' ELSE owner END,
			lease_until = CASE WHEN ? THEN 0 ELSE lease_until END
			WHERE id = ? AND owner = ? AND owner <> '' AND epoch = ?
			RETURNING rid, last_seq`},
		{&w.ackInbox, `DELETE FROM inbox WHERE rid = ? AND id <= ?`},
		{&w.claim, `UPDATE runs SET owner = ?, epoch = ?, lease_until = ?, updated_at = ? WHERE rid = ?`},
		{&w.expired, expiredQuery},
		{&w.renew, renewStmt},
		{&w.held, heldQuery},
		{&w.releaseLease, `UPDATE runs SET owner = '', lease_until = 0, updated_at = ?
			WHERE id = ? AND owner = ? AND owner <> '' AND epoch = ?`},
		{&w.exists, `SELECT 1 FROM runs WHERE id = ?`},
		{&w.insertMessage, `INSERT INTO inbox (rid, kind, text, time, parts) VALUES (?, ?, ?, ?, ?)`},
		{&w.wake, `UPDATE runs SET state = 'running', owner = '', lease_until = 0, updated_at = ? WHERE rid = ?`},
		{&w.setUpd, `UPDATE runs SET updated_at = ? WHERE rid = ?`},
		{&w.keySeq, `SELECT seq FROM journal WHERE rid = ? AND key = ?`},
	} {
		st, err := c.PrepareContext(ctx, p.q)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("prepare %q: %w", p.q, err)
		}
		*p.s = st
		w.all = append(w.all, st)
	}
	return w, nil
}

// insertStmt returns the statement that inserts n records.
func (w *writer) insertStmt(n int) (*sql.Stmt, error) {
	if st := w.insertN[n]; st != nil {
		return st, nil
	}
	var q strings.Builder
	q.WriteString("INSERT INTO journal (pos, rid, seq, key, type, data, time) VALUES ")
	for i := range n {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?, ?)")
	}
	q.WriteString(" ON CONFLICT (rid, key) DO NOTHING")
	st, err := w.conn.PrepareContext(context.Background(), q.String())
	if err != nil {
		return nil, fmt.Errorf("prepare insert of %d records: %w", n, err)
	}
	w.insertN[n] = st
	w.all = append(w.all, st)
	return st, nil
}

func (w *writer) close() error {
	var errs []error
	for _, st := range w.all {
		errs = append(errs, st.Close())
	}
	w.all = nil
	return errors.Join(errs...)
}

// abort rolls the whole transaction back, if one is still open.
func (w *writer) abort() { _, _ = w.rollback.Exec() }

// run calls fn, turning a panic into an error so that one bad request
// cannot take its batch down with it.
func (w *writer) run(fn func(w *writer) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlite store: internal error: %v", p)
		}
	}()
	return fn(w)
}

// lease is what a write needs to know about a run.
type lease struct {
	rid        int64
	state      store.State
	owner      string
	epoch      int64
	leaseUntil int64
	lastSeq    int64
}

func (w *writer) lease(id string) (lease, error) {
	var l lease
	err := w.getLease.QueryRow(id).Scan(&l.rid, &l.state, &l.owner, &l.epoch, &l.leaseUntil, &l.lastSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("run %q: %w", id, store.ErrNotFound)
	}
	return l, err
}

func (l lease) holds(sl store.Lease) bool {
	return l.owner != "" && l.owner == sl.Owner && l.epoch == sl.Epoch
}

// insertRecords adds records to run rid (whose id is id) with seqs after
// last, in statements of up to maxRowsPerInsert rows.
func (w *writer) insertRecords(rid int64, id string, last int64, records []store.Record) error {
	if last+int64(len(records)) > maxSeq {
		return fmt.Errorf("run %q: %d records: a run of a SQLite store holds at most %d", id, last+int64(len(records)), maxSeq)
	}
	base := last
	for len(records) > 0 {
		n := min(len(records), maxRowsPerInsert)
		st, err := w.insertStmt(n)
		if err != nil {
			return err
		}
		args := w.args[:0]
		for i := range records[:n] {
			r := &records[i]
			last++
			args = append(args, journalPos(rid, last), rid, last, r.Key, r.Type, sqlval.Blob(r.Data), sqlval.Nanos(r.Time))
		}
		w.args = args
		res, err := st.Exec(args...)
		clear(args)
		if err != nil {
			return err
		}
		if got, err := res.RowsAffected(); err != nil {
			return err
		} else if got != int64(n) {
			return fmt.Errorf("run %q: key %q: %w", id, w.conflicting(rid, base, records[:n]), store.ErrConflict)
		}
		records = records[n:]
	}
	return nil
}

// conflicting returns the first of records whose key was in the journal
// before seq base+1, for the error message of a failed insert.
func (w *writer) conflicting(rid, base int64, records []store.Record) string {
	for _, r := range records {
		var seq int64
		if err := w.keySeq.QueryRow(rid, r.Key).Scan(&seq); err == nil && seq <= base {
			return r.Key
		}
	}
	return records[0].Key
}

func (w *writer) create(r *store.Run, owner string, lease time.Duration, records []store.Record, p *store.Pool) (int64, error) {
	now := sqlval.Nanos(w.now)
	var until int64
	if owner != "" {
		until = sqlval.Nanos(w.now.Add(lease))
	}
	usage, err := sqlval.UsageJSON(&r.Usage)
	if err != nil {
		return 0, err
	}
	res, err := w.insertRun.Exec(r.ID, r.Swarm, r.Parent, string(store.Running), r.Turn, r.MaxTurns, r.Agent,
		sqlval.Blob(r.Result), r.Reason, usage, owner, until, int64(len(records)), now, now,
		p.Calls, p.Tools, p.Tokens, p.Cost, p.Lifted)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, err
	} else if n == 0 {
		return 0, fmt.Errorf("run %q: %w", r.ID, store.ErrExists)
	}
	rid, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	if rid > maxRid {
		return 0, fmt.Errorf("run %q: the store has created %d runs, the most a SQLite store numbers", r.ID, maxRid)
	}
	return rid, w.insertRecords(rid, r.ID, 0, records)
}

func (w *writer) append(l store.Lease, records []store.Record, u *store.Update, usage any) (last int64, woke bool, err error) {
	last, err = w.appendRow(l, records, u, usage)
	if err != nil || !store.WaitsForMail(u.State, u.Reason) {
		return last, false, err
	}
	woke, err = w.wakeIdle(l.RunID)
	return last, woke, err
}

// appendRow is append without the waking of a run that goes idle with
// mail unread.
func (w *writer) appendRow(l store.Lease, records []store.Record, u *store.Update, usage any) (int64, error) {
	n := int64(len(records))
	args := []any{n, sqlval.Nanos(w.now), sqlval.NonZero(u.Turn), sqlval.NonZero(u.MaxTurns), sqlval.NonEmpty(u.Agent),
		sqlval.Blob(u.Result), sqlval.Reason(u), usage}
	release := u.Release || u.State.Terminal() || u.State == store.Paused
	st := w.setSeq
	if u.State != "" || release {
		st = w.setRow
		args = append(args, sqlval.NonEmpty(string(u.State)), release, release)
	}
	args = append(args, l.RunID, l.Owner, l.Epoch)
	var rid, last int64
	err := st.QueryRow(args...).Scan(&rid, &last)
	if errors.Is(err, sql.ErrNoRows) {
		// Not updated: find out why.
		cur, err := w.lease(l.RunID)
		if err != nil {
			return 0, err
		}
		if !cur.holds(l) {
			return 0, fmt.Errorf("run %q (owner %q, epoch %d): %w", l.RunID, l.Owner, l.Epoch, store.ErrLeaseLost)
		}
		return 0, fmt.Errorf("run %q: lease check failed unexpectedly", l.RunID)
	}
	if err != nil {
		return 0, err
	}
	// A conflict here rolls the row update back with the savepoint.
	if err := w.insertRecords(rid, l.RunID, last-n, records); err != nil {
		return 0, err
	}
	if u.AckInbox > 0 {
		if _, err := w.ackInbox.Exec(rid, u.AckInbox); err != nil {
			return 0, err
		}
	}
	if u.AckMail > 0 {
		if err := w.ackMail(rid, u.AckMail); err != nil {
			return 0, err
		}
	}
	return last, nil
}

func (w *writer) claimOne(id, owner string, lease time.Duration) (store.Lease, error) {
	cur, err := w.lease(id)
	if err != nil {
		return store.Lease{}, err
	}
	now := sqlval.Nanos(w.now)
	if cur.state != store.Running {
		return store.Lease{}, fmt.Errorf("run %q in state %s: %w", id, cur.state, store.ErrInvalidState)
	}
	if cur.owner != "" && cur.owner != owner && cur.leaseUntil > now {
		return store.Lease{}, fmt.Errorf("run %q held by %q: %w", id, cur.owner, store.ErrLeased)
	}
	l, err := w.take(cur.rid, id, owner, cur.epoch+1, lease)
	if err == nil && cur.owner != "" && cur.owner != owner {
		l.From, l.FromUntil = cur.owner, sqlval.FromNanos(cur.leaseUntil)
	}
	return l, err
}

func (w *writer) take(rid int64, id, owner string, epoch int64, lease time.Duration) (store.Lease, error) {
	if _, err := w.claim.Exec(owner, epoch, sqlval.Nanos(w.now.Add(lease)), sqlval.Nanos(w.now), rid); err != nil {
		return store.Lease{}, err
	}
	return store.Lease{RunID: id, Owner: owner, Epoch: epoch}, nil
}

func (w *writer) claimExpired(owner string, lease time.Duration, limit int) ([]store.Lease, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := w.expired.Query(sqlval.Nanos(w.now), limit)
	if err != nil {
		return nil, err
	}
	type due struct {
		rid int64
		l   store.Lease
	}
	var dues []due
	for rows.Next() {
		var d due
		var until int64
		if err := rows.Scan(&d.rid, &d.l.RunID, &d.l.Epoch, &d.l.From, &until); err != nil {
			rows.Close()
			return nil, err
		}
		if d.l.From != "" && d.l.From != owner {
			d.l.FromUntil = sqlval.FromNanos(until)
		} else {
			d.l.From = ""
		}
		dues = append(dues, d)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Oldest run first (the query gives them by lease expiry).
	slices.SortFunc(dues, func(a, b due) int { return cmp.Compare(a.rid, b.rid) })
	out := make([]store.Lease, len(dues))
	for i, d := range dues {
		if out[i], err = w.take(d.rid, d.l.RunID, owner, d.l.Epoch+1, lease); err != nil {
			return nil, err
		}
		out[i].From, out[i].FromUntil = d.l.From, d.l.FromUntil
	}
	return out, nil
}

func (w *writer) renewAll(owner string, lease time.Duration) (store.Renewal, error) {
	var out store.Renewal
	if _, err := w.renew.Exec(sqlval.Nanos(w.now.Add(lease)), owner); err != nil {
		return out, err
	}
	rows, err := w.held.Query(owner)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var pending bool
		if err := rows.Scan(&id, &pending); err != nil {
			return store.Renewal{}, err
		}
		out.Held = append(out.Held, id)
		if pending {
			out.Pending = append(out.Pending, id)
		}
	}
	return out, rows.Err()
}

func (w *writer) exist(id string) error {
	var one int
	err := w.exists.QueryRow(id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %q: %w", id, store.ErrNotFound)
	}
	return err
}

func (w *writer) releaseOne(l store.Lease) error {
	res, err := w.releaseLease.Exec(sqlval.Nanos(w.now), l.RunID, l.Owner, l.Epoch)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil || n > 0 {
		return err
	}
	if err := w.exist(l.RunID); err != nil {
		return err
	}
	return fmt.Errorf("run %q (owner %q, epoch %d): %w", l.RunID, l.Owner, l.Epoch, store.ErrLeaseLost)
}

// send inserts m and reports whether it woke a paused run.
func (w *writer) send(id string, m *store.Message, parts string, woke *bool) error {
	cur, err := w.lease(id)
	if err != nil {
		return err
	}
	switch {
	case store.PauseNotCurrent(*m, cur.state, cur.lastSeq):
		return fmt.Errorf("resume run %q at pause %d (state %s, last record %d): %w", id, m.Pause, cur.state, cur.lastSeq, store.ErrPauseNotCurrent)
	case m.Kind == store.MsgResume && cur.state != store.Paused,
		m.Kind == store.MsgStop && cur.state.Terminal():
		return fmt.Errorf("%s for run %q in state %s: %w", m.Kind, id, cur.state, store.ErrInvalidState)
	}
	if m.Time.IsZero() {
		m.Time = w.now
	}
	res, err := w.insertMessage.Exec(cur.rid, string(m.Kind), m.Text, sqlval.Nanos(m.Time), parts)
	if err != nil {
		return err
	}
	if m.ID, err = res.LastInsertId(); err != nil {
		return err
	}
	*woke, err = w.deliver(cur)
	return err
}

// deliver notes that a message reached run cur now and, if the run is
// paused, makes it Running and unowned (runnable), which it reports.
func (w *writer) deliver(cur lease) (woke bool, err error) {
	if cur.state == store.Paused {
		_, err = w.wake.Exec(sqlval.Nanos(w.now), cur.rid)
		return err == nil, err
	}
	_, err = w.setUpd.Exec(sqlval.Nanos(w.now), cur.rid)
	return false, err
}
