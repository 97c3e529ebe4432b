package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

// nowNS is the database server's clock in Unix nanoseconds (microsecond
// precision). Leases are measured on it, so that nodes with skewed clocks
// agree on when a lease expires.
const nowNS = `(extract(epoch from clock_timestamp()) * 1000000000)::bigint`

// maxPayloadID is the longest run id announced by NOTIFY (payloads must
// stay under 8000 bytes); changes of runs with longer ids are found by
// polling.
const maxPayloadID = 7900

const runCols = `id, swarm, parent, state, turn, max_turns, agent, result, reason, usage,
	owner, epoch, ` + leaseUntil + `, last_seq, created_at, updated_at`

// leaseUntil is the lease of the run of swarm_runs's current row: the
// later of its own and its owner's (migration 0013).
const leaseUntil = `CASE WHEN swarm_runs.owner = '' THEN swarm_runs.lease_until ELSE greatest(swarm_runs.lease_until,
	coalesce((SELECT l.until FROM swarm_leases l WHERE l.owner = swarm_runs.owner), 0)) END`

// ownerLock is the first key of the advisory locks on owners' rows of
// swarm_leases; the second is a hash of the schema and the owner.
const ownerLock = 0x53574c53 // "SWLS"

// ownerKey is the second key of owner expr's advisory lock.
func ownerKey(expr string) string {
	return `hashtext(coalesce(current_schema(), '') || ' ' || ` + expr + `)`
}

// ensureOwner is a statement that gives owner $n a row of swarm_leases if
// it has none, under a shared advisory lock on the owner held until the
// commit, taken before the row is looked for: a sweep (sweepLeases), which
// deletes an owner's row only under the exclusive lock and when the owner
// holds no running run, then either sees the run this transaction gives
// the owner or has deleted the row before this looks for it.
func ensureOwner(n int) string { return ensureOwnerIf(n, "") }

// ensureOwnerIf is ensureOwner when the table expression when has a row
// (always, if when is empty): the idle claim poll takes no lock.
func ensureOwnerIf(n int, when string) string {
	from := ""
	if when != "" {
		from = " FROM (SELECT 1 FROM " + when + " LIMIT 1) w"
	}
	return fmt.Sprintf(`INSERT INTO swarm_leases (owner)
		SELECT $%[1]d::text FROM (SELECT pg_advisory_xact_lock_shared(%[2]d, %[3]s)::text AS v%[4]s OFFSET 0) l
		WHERE $%[1]d::text <> '' AND l.v IS NOT NULL
		ON CONFLICT (owner) DO NOTHING`, n, ownerLock, ownerKey(fmt.Sprintf("$%d::text", n)), from)
}

// lapsed is true of a row r of swarm_runs held by an owner whose lease
// (its own and its owner's) ran out by now.
func lapsed(r, now string) string {
	return fmt.Sprintf(`(%[1]s.lease_until <= %[2]s AND NOT EXISTS (SELECT 1 FROM swarm_leases o
		WHERE o.owner = %[1]s.owner AND o.until > %[2]s))`, r, now)
}

// formerHolder is, in a claim's RETURNING list, the owner the run had
// before the claim and when its lease ran out (the later of the run's own
// and the owner's), read from the statement's snapshot, which does not see
// the claim's own update.
func formerHolder(rid string) string {
	return `(SELECT o.owner FROM swarm_runs o WHERE o.rid = ` + rid + `),
		(SELECT greatest(o.lease_until, coalesce((SELECT l.until FROM swarm_leases l WHERE l.owner = o.owner), 0))
			FROM swarm_runs o WHERE o.rid = ` + rid + `)`
}

// queries are the statements of a store. pgx prepares and caches each per
// connection. The writes return the payloads that announce their changes
// (see notify.go).
type queries struct {
	create, append, claim, claimExpired, renew, release string
	get, read, inbox, exists, lease                     string
	deliver, post, wakeIdle                             string
}

func newQueries() queries {
	// notify is the payload that announces a change of the run whose id
	// is idExpr, as a text column (NULL for none), for Store.announce.
	notify := func(kind, idExpr string) string {
		return fmt.Sprintf(`(CASE WHEN octet_length(%[2]s) <= %[3]d THEN '%[1]s:' || %[2]s END)`, kind, idExpr, maxPayloadID)
	}
	// deliver notes that a message or mail reached runs now and makes the
	// ones it wakes Running and unowned (runnable), announcing both. src
	// gives (rid, wake) of the runs, wake computed from their rows as
	// locked by the transaction.
	deliver := func(src string) string {
		return `UPDATE swarm_runs r SET updated_at = ` + nowNS + `,
				state = CASE WHEN o.wake THEN 'running' ELSE r.state END,
				owner = CASE WHEN o.wake THEN '' ELSE r.owner END,
				lease_until = CASE WHEN o.wake THEN 0 ELSE r.lease_until END
			FROM (` + src + `) o
			WHERE r.rid = o.rid
			RETURNING r.rid, ` + notify(kindInbox, "r.id") + ` AS inbox,
				CASE WHEN o.wake THEN ` + notify(kindRunnable, "r.id") + ` END AS runnable`
	}
	// records are arguments $a..$a+3: keys, types, data, times.
	records := func(a int) string {
		return fmt.Sprintf(`unnest($%d::text[], $%d::text[], $%d::bytea[], $%d::bigint[]) WITH ORDINALITY AS x(k, t, d, tm, o)`, a, a+1, a+2, a+3)
	}
	return queries{
		create: `WITH n AS (SELECT ` + nowNS + ` AS now), k AS (` + ensureOwner(10) + `),
			r AS (INSERT INTO swarm_runs (id, swarm, parent, state, turn, max_turns, agent, result, reason, usage,
				owner, epoch, lease_until, last_seq, created_at, updated_at)
				SELECT $1, $2, $3, 'running', $4, $5, $6, $7, $8, $9,
					$10, 1, CASE WHEN $10 = '' THEN 0 ELSE n.now + $11 END, $12, n.now, n.now FROM n
				ON CONFLICT (id) DO NOTHING
				RETURNING rid, id, owner),
			j AS (INSERT INTO swarm_journal (rid, seq, key, type, data, time)
				SELECT r.rid, x.o, x.k, x.t, x.d, x.tm FROM r, ` + records(13) + `)
			SELECT r.rid, ` + notify(kindAppended, "r.id") + `,
				CASE WHEN r.owner = '' THEN ` + notify(kindRunnable, "r.id") + ` END FROM r`,

		// An append checks the lease and updates the row, adds the
		// records and acknowledges inbox messages and mails in one
		// statement: a duplicate key aborts all of it.
		append: `WITH u AS (UPDATE swarm_runs SET last_seq = last_seq + $4, updated_at = ` + nowNS + `,
				turn = coalesce($5, turn), max_turns = coalesce($6, max_turns), agent = coalesce($7, agent),
				result = coalesce($8, result), reason = coalesce($9, reason), usage = coalesce($10, usage),
				state = coalesce($11, state),
				owner = CASE WHEN $12 THEN '' ELSE owner END,
				lease_until = CASE WHEN $12 THEN 0 ELSE lease_until END
				WHERE id = $1 AND owner = $2 AND owner <> '' AND epoch = $3
				RETURNING rid, id, last_seq),
			j AS (INSERT INTO swarm_journal (rid, seq, key, type, data, time)
				SELECT u.rid, u.last_seq - $4 + x.o, x.k, x.t, x.d, x.tm FROM u, ` + records(15) + `),
			a AS (DELETE FROM swarm_inbox WHERE $14::bigint > 0 AND rid IN (SELECT rid FROM u) AND id <= $14::bigint),
			m AS (` + ackMailSQL(19) + `)
			SELECT u.last_seq, ` + notify(kindAppended, "u.id") + `,
				CASE WHEN $13 THEN ` + notify(kindRunnable, "u.id") + ` END FROM u`,

		claim: `WITH k AS (` + ensureOwner(2) + `)
			UPDATE swarm_runs SET owner = $2, epoch = epoch + 1, lease_until = ` + nowNS + ` + $3, updated_at = ` + nowNS + `
			WHERE id = $1 AND state = 'running' AND (owner = '' OR owner = $2 OR ` + lapsed("swarm_runs", nowNS) + `)
			RETURNING epoch, ` + formerHolder("swarm_runs.rid"),

		// The claimable runs: the unowned ones (swarm_runs_unowned, in
		// rid order), then those of the owners whose lease ran out
		// (swarm_leases, a row per owner, then swarm_runs_held for each,
		// bounded by now), by lease expiry. Neither reads a run that a
		// live owner holds, nor the dead entries of runs that live owners
		// ran and finished (see TestQueryPlans). now is a subquery:
		// clock_timestamp() is volatile, and a volatile expression
		// cannot bound an index scan. The lock re-checks each candidate
		// as it is now, since another node may have claimed it. Only a
		// poll that claims a run makes sure of the claimer's row of
		// swarm_leases (ensureOwnerIf).
		claimExpired: `WITH t AS (SELECT ` + nowNS + ` AS now),
			cand AS ((SELECT rid, 0::bigint AS due FROM swarm_runs WHERE state = 'running' AND owner = '' ORDER BY rid LIMIT $3)
				UNION ALL
				(SELECT h.rid, greatest(h.lease_until, o.until) FROM t, swarm_leases o,
					LATERAL (SELECT rid, lease_until FROM swarm_runs
						WHERE owner = o.owner AND owner <> '' AND state = 'running' AND lease_until <= t.now
						ORDER BY lease_until, rid LIMIT $3) h
				WHERE o.until <= t.now)),
			c AS (SELECT r.rid FROM swarm_runs r, t
				WHERE r.rid IN (SELECT rid FROM cand ORDER BY due, rid LIMIT $3)
					AND r.state = 'running' AND (r.owner = '' OR ` + lapsed("r", "t.now") + `)
				FOR UPDATE OF r SKIP LOCKED),
			k AS (` + ensureOwnerIf(1, "c") + `)
			UPDATE swarm_runs r SET owner = $1, epoch = r.epoch + 1, lease_until = ` + nowNS + ` + $2, updated_at = ` + nowNS + `
			FROM c WHERE r.rid = c.rid
			RETURNING r.rid, r.id, r.epoch, ` + formerHolder("r.rid"),

		// A heartbeat updates its owner's row only: the runs' rows
		// stay as they are.
		renew: `WITH u AS (UPDATE swarm_leases SET until = ` + nowNS + ` + $2 WHERE owner = $1)
			SELECT id, EXISTS (SELECT 1 FROM swarm_inbox i WHERE i.rid = r.rid) FROM swarm_runs r
			WHERE owner = $1 AND owner <> '' AND state = 'running'`,

		release: `UPDATE swarm_runs SET owner = '', lease_until = 0, updated_at = ` + nowNS + `
			WHERE id = $1 AND owner = $2 AND owner <> '' AND epoch = $3
			RETURNING ` + notify(kindRunnable, "id"),

		get: `SELECT ` + runCols + ` FROM swarm_runs WHERE id = $1`,
		read: `SELECT j.seq, j.key, j.type, j.data, j.time FROM swarm_runs r
			LEFT JOIN LATERAL (SELECT seq, key, type, data, time FROM swarm_journal
				WHERE rid = r.rid AND seq > $2 ORDER BY seq LIMIT $3) j ON true
			WHERE r.id = $1 ORDER BY j.seq`,
		inbox: `SELECT i.id, i.kind, i.text, i.time, i.parts FROM swarm_runs r
			LEFT JOIN swarm_inbox i ON i.rid = r.rid WHERE r.id = $1 ORDER BY i.id`,
		exists: `SELECT true FROM swarm_runs WHERE id = $1`,
		lease:  `SELECT rid, state, owner, ` + leaseUntil + ` > ` + nowNS + ` FROM swarm_runs WHERE id = $1`,

		// Send runs it after locking run $1: a message wakes a paused run.
		deliver: deliver(`SELECT rid, state = 'paused' AS wake FROM swarm_runs WHERE rid = ANY($1::bigint[])`),
		post:    postSQL(deliver),
		// An append that paused run $1 for mail ($2) while its mailbox
		// holds mail it has not acknowledged (posted while it worked,
		// which did not wake it) leaves it runnable instead.
		wakeIdle: `UPDATE swarm_runs r SET updated_at = ` + nowNS + `, state = 'running', owner = '', lease_until = 0
			FROM swarm_mailboxes b
			WHERE r.id = $1 AND r.state = 'paused' AND r.reason = $2 AND b.rid = r.rid AND b.last > b.acked
			RETURNING ` + notify(kindRunnable, "r.id"),
	}
}

func (s *Store) check() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// wrap adds the database to an error.
func (s *Store) wrap(op string, err error) error {
	if unavailable(err) {
		// The database restarted or the network failed: the pool's idle
		// connections are likely dead too. Replace them all.
		s.pool.Reset()
		return fmt.Errorf("postgres store %s: %s: %w (%w)", s.target, op, err, store.ErrUnavailable)
	}
	if rolledBack(err) {
		return fmt.Errorf("postgres store %s: %s: %w (%w)", s.target, op, err, store.ErrUnavailable)
	}
	return fmt.Errorf("postgres store %s: %s: %w", s.target, op, err)
}

// rolledBack reports whether the database rolled the statement's
// transaction back for reasons of concurrency (a serialization failure, a
// deadlock, a lock it could not get, a cancelled statement): nothing was
// wrong with the data, and running it again may succeed.
func rolledBack(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return strings.HasPrefix(pe.Code, "40") || pe.Code == "55P03" || pe.Code == "57014"
}

// unavailable reports whether err is a failure of the connection rather
// than of the statement or the client: the server is down, restarting or
// out of connections, or the network failed; trying again may succeed.
// A refusal of this client (authentication, a database that does not
// exist) is not.
func unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "53300": // admin shutdown, crash shutdown, cannot connect now, too many connections
			return true
		}
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}

// again runs an idempotent operation once more if it failed on a broken
// connection: wrap has emptied the pool, so the second try connects anew.
// The first statement after a database restart fails this way on every
// connection that was idle through it.
func again[T any](ctx context.Context, f func() (T, error)) (T, error) {
	v, err := f()
	if err != nil && unavailable(err) && ctx.Err() == nil {
		v, err = f()
	}
	return v, err
}

// recordArgs splits records into the four arrays of the records fragment.
func recordArgs(records []store.Record) (keys, types []string, data [][]byte, times []int64) {
	keys = make([]string, len(records))
	types = make([]string, len(records))
	data = make([][]byte, len(records))
	times = make([]int64, len(records))
	for i, r := range records {
		keys[i], types[i], times[i] = r.Key, r.Type, sqlval.Nanos(r.Time)
		if len(r.Data) > 0 {
			data[i] = r.Data
		}
	}
	return keys, types, data, times
}

// conflict turns a unique violation of the journal's keys into
// store.ErrConflict.
func conflict(runID string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "swarm_journal_key" {
		return fmt.Errorf("run %q: %s: %w", runID, pe.Detail, store.ErrConflict)
	}
	return err
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, r store.Run, owner string, lease time.Duration, records []store.Record) (store.Lease, error) {
	if err := s.check(); err != nil {
		return store.Lease{}, err
	}
	if r.ID == "" {
		return store.Lease{}, errors.New("create run: empty id")
	}
	if err := store.CheckKeys(r.ID, records); err != nil {
		return store.Lease{}, fmt.Errorf("create run: %w", err)
	}
	usage, err := sqlval.UsageJSON(&r.Usage)
	if err != nil {
		return store.Lease{}, fmt.Errorf("create run %q: %w", r.ID, err)
	}
	if err := store.CheckRunBlobs(r.ID, r.Blobs); err != nil {
		return store.Lease{}, err
	}
	keys, types, data, times := recordArgs(records)
	var (
		rid            int64
		appended, runs *string
	)
	create := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) error {
		return q.QueryRow(ctx, s.q.create, r.ID, r.Swarm, r.Parent, r.Turn, r.MaxTurns, r.Agent,
			sqlval.Blob(r.Result), r.Reason, usage, owner, int64(lease), int64(len(records)),
			keys, types, data, times).Scan(&rid, &appended, &runs)
	}
	if len(r.Blobs) == 0 {
		err = create(s.pool)
	} else {
		// The run's blobs are kept and referred to with its first
		// records, in one transaction.
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if err := create(tx); err != nil {
				return err
			}
			for _, b := range r.Blobs {
				if err := putBlob(ctx, tx, rid, b); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if errors.Is(err, store.ErrNoBlob) {
		return store.Lease{}, fmt.Errorf("create run %q: %w", r.ID, err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Lease{}, fmt.Errorf("create run %q: %w", r.ID, store.ErrExists)
	}
	if err != nil {
		return store.Lease{}, s.wrap("create run "+r.ID, conflict(r.ID, err))
	}
	s.announce(appended, runs)
	return store.Lease{RunID: r.ID, Owner: owner, Epoch: 1}, nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanRun(row rowScanner) (store.Run, error) {
	var (
		r                      store.Run
		state                  string
		usage                  *string
		lease, created, update int64
	)
	err := row.Scan(&r.ID, &r.Swarm, &r.Parent, &state, &r.Turn, &r.MaxTurns, &r.Agent, &r.Result, &r.Reason, &usage,
		&r.Owner, &r.Epoch, &lease, &r.LastSeq, &created, &update)
	if err != nil {
		return store.Run{}, err
	}
	r.State = store.State(state)
	if len(r.Result) == 0 {
		r.Result = nil
	}
	if usage != nil && *usage != "" {
		if err := json.Unmarshal([]byte(*usage), &r.Usage); err != nil {
			return store.Run{}, fmt.Errorf("run %q: decode usage: %w", r.ID, err)
		}
	}
	r.LeaseUntil, r.CreatedAt, r.UpdatedAt = sqlval.FromNanos(lease), sqlval.FromNanos(created), sqlval.FromNanos(update)
	return r, nil
}

// Get implements store.Store. It is tried once more when its connection
// turns out broken.
func (s *Store) Get(ctx context.Context, id string) (store.Run, error) {
	return again(ctx, func() (store.Run, error) { return s.get(ctx, id) })
}

func (s *Store) get(ctx context.Context, id string) (store.Run, error) {
	if err := s.check(); err != nil {
		return store.Run{}, err
	}
	r, err := scanRun(s.pool.QueryRow(ctx, s.q.get, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Run{}, fmt.Errorf("get run %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, s.wrap("get run "+id, err)
	}
	return r, nil
}

// List implements store.Store. It is tried once more when its connection
// turns out broken.
func (s *Store) List(ctx context.Context, f store.Filter) ([]store.Run, error) {
	return again(ctx, func() ([]store.Run, error) { return s.list(ctx, f) })
}

// listQuery is list's query for f and its arguments. Each filter has an
// index ending with rid (migration 0003), so that newest first is an
// index scan without a sort (see TestQueryPlans).
func listQuery(f store.Filter) (string, []any) {
	where, args := sqlval.Where(f, "swarm_runs", func(n int) string { return "$" + strconv.Itoa(n) })
	var limit any
	if f.Limit > 0 {
		limit = f.Limit
	}
	args = append(args, limit, max(f.Offset, 0))
	return "SELECT " + runCols + " FROM swarm_runs" + where + fmt.Sprintf(" ORDER BY rid DESC LIMIT $%d OFFSET $%d", len(args)-1, len(args)), args
}

func (s *Store) list(ctx context.Context, f store.Filter) ([]store.Run, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	q, args := listQuery(f)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.wrap("list runs", err)
	}
	defer rows.Close()
	out := []store.Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, s.wrap("list runs", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("list runs", err)
	}
	return out, nil
}

// Read implements store.Store. It is tried once more when its connection
// turns out broken.
func (s *Store) Read(ctx context.Context, id string, after int64, limit int) ([]store.Record, error) {
	return again(ctx, func() ([]store.Record, error) { return s.read(ctx, id, after, limit) })
}

func (s *Store) read(ctx context.Context, id string, after int64, limit int) ([]store.Record, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var lim any
	if limit > 0 {
		lim = limit
	}
	rows, err := s.pool.Query(ctx, s.q.read, id, after, lim)
	if err != nil {
		return nil, s.wrap("read run "+id, err)
	}
	defer rows.Close()
	out := []store.Record{}
	found := false
	for rows.Next() {
		found = true
		var (
			seq, t   *int64
			key, typ *string
			data     []byte
		)
		if err := rows.Scan(&seq, &key, &typ, &data, &t); err != nil {
			return nil, s.wrap("read run "+id, err)
		}
		if seq == nil {
			continue // the run has no records after after
		}
		rec := store.Record{Seq: *seq, Key: *key, Type: *typ, Time: sqlval.FromNanos(*t)}
		if len(data) > 0 {
			rec.Data = json.RawMessage(data)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("read run "+id, err)
	}
	if !found {
		return nil, fmt.Errorf("read run %q: %w", id, store.ErrNotFound)
	}
	return out, nil
}

// notFoundOr tells ErrNotFound from err for a write that changed no row of
// run id.
func (s *Store) notFoundOr(ctx context.Context, id string, err error) error {
	var ok bool
	qerr := s.pool.QueryRow(ctx, s.q.exists, id).Scan(&ok)
	if errors.Is(qerr, pgx.ErrNoRows) {
		return fmt.Errorf("run %q: %w", id, store.ErrNotFound)
	}
	if qerr != nil {
		return s.wrap("look up run "+id, qerr)
	}
	return err
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, l store.Lease, records []store.Record, u store.Update) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
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
	release := u.Release || u.State.Terminal() || u.State == store.Paused
	keys, types, data, times := recordArgs(records)
	var (
		last                 int64
		appended, runs, woke *string
	)
	args := []any{l.RunID, l.Owner, l.Epoch, int64(len(records)),
		sqlval.NonZero(u.Turn), sqlval.NonZero(u.MaxTurns), sqlval.NonEmpty(u.Agent), sqlval.Blob(u.Result), sqlval.Reason(&u), usage,
		sqlval.NonEmpty(string(u.State)), release, u.MakesRunnable(), u.AckInbox,
		keys, types, data, times, u.AckMail}
	if store.WaitsForMail(u.State, u.Reason) {
		// Going idle: the append and the check for mail unread commit
		// together (see wakeIdle).
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, s.q.append, args...).Scan(&last, &appended, &runs); err != nil {
				return err
			}
			err := tx.QueryRow(ctx, s.q.wakeIdle, l.RunID, store.AwaitingMail).Scan(&woke)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		})
	} else {
		err = s.pool.QueryRow(ctx, s.q.append, args...).Scan(&last, &appended, &runs)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, s.notFoundOr(ctx, l.RunID, fmt.Errorf("append to run %q (owner %q, epoch %d): %w", l.RunID, l.Owner, l.Epoch, store.ErrLeaseLost))
	}
	if err != nil {
		return 0, s.wrap("append to run "+l.RunID, conflict(l.RunID, err))
	}
	s.announce(appended, runs, woke)
	return last, nil
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, id, owner string, lease time.Duration) (store.Lease, error) {
	if err := s.check(); err != nil {
		return store.Lease{}, err
	}
	if owner == "" {
		return store.Lease{}, fmt.Errorf("claim run %q: empty owner", id)
	}
	// The claim is one conditional update; when it changes nothing, the
	// row says why, unless it changed meanwhile: then try again.
	for range 3 {
		l := store.Lease{RunID: id, Owner: owner}
		var until int64
		err := s.pool.QueryRow(ctx, s.q.claim, id, owner, int64(lease)).Scan(&l.Epoch, &l.From, &until)
		if err == nil {
			return fromHolder(l, until), nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.Lease{}, s.wrap("claim run "+id, err)
		}
		var (
			rid           int64
			state, holder string
			live          bool
		)
		err = s.pool.QueryRow(ctx, s.q.lease, id).Scan(&rid, &state, &holder, &live)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return store.Lease{}, fmt.Errorf("claim run %q: %w", id, store.ErrNotFound)
		case err != nil:
			return store.Lease{}, s.wrap("claim run "+id, err)
		case store.State(state) != store.Running:
			return store.Lease{}, fmt.Errorf("claim run %q in state %s: %w", id, state, store.ErrInvalidState)
		case holder != "" && holder != owner && live:
			return store.Lease{}, fmt.Errorf("claim run %q: held by %q: %w", id, holder, store.ErrLeased)
		}
	}
	return store.Lease{}, fmt.Errorf("claim run %q: the run keeps changing: %w", id, store.ErrLeased)
}

// fromHolder completes a claim's lease with the owner it took the run
// from (see store.Lease.From), whose lease ran out at until.
func fromHolder(l store.Lease, until int64) store.Lease {
	if l.From == "" || l.From == l.Owner {
		l.From = ""
		return l
	}
	l.FromUntil = time.Unix(0, until)
	return l
}

// ClaimExpired implements store.Store. A limit <= 0 means no limit.
func (s *Store) ClaimExpired(ctx context.Context, owner string, lease time.Duration, limit int) ([]store.Lease, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if owner == "" {
		return nil, errors.New("claim expired runs: empty owner")
	}
	var lim any
	if limit > 0 {
		lim = limit
	}
	rows, err := s.pool.Query(ctx, s.q.claimExpired, owner, int64(lease), lim)
	if err != nil {
		return nil, s.wrap("claim expired runs", err)
	}
	type claimed struct {
		rid int64
		l   store.Lease
	}
	var got []claimed
	for rows.Next() {
		c := claimed{l: store.Lease{Owner: owner}}
		var until int64
		if err := rows.Scan(&c.rid, &c.l.RunID, &c.l.Epoch, &c.l.From, &until); err != nil {
			rows.Close()
			return nil, s.wrap("claim expired runs", err)
		}
		c.l = fromHolder(c.l, until)
		got = append(got, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.wrap("claim expired runs", err)
	}
	if limit <= 0 || len(got) < limit {
		// Nothing more to claim: a moment to drop the rows of owners
		// that are gone.
		s.maybeSweep(ctx, owner)
	}
	slices.SortFunc(got, func(a, b claimed) int { return int(a.rid - b.rid) })
	out := make([]store.Lease, len(got))
	for i, c := range got {
		out[i] = c.l
	}
	return out, nil
}

// Renew implements store.Store. It is tried once more when its connection
// turns out broken (a renewal twice is one).
func (s *Store) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	return again(ctx, func() (store.Renewal, error) { return s.renew(ctx, owner, lease) })
}

func (s *Store) renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if err := s.check(); err != nil {
		return store.Renewal{}, err
	}
	var out store.Renewal
	if owner == "" {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, s.q.renew, owner, int64(lease))
	if err != nil {
		return out, s.wrap("renew leases of "+owner, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      string
			pending bool
		)
		if err := rows.Scan(&id, &pending); err != nil {
			return store.Renewal{}, s.wrap("renew leases of "+owner, err)
		}
		out.Held = append(out.Held, id)
		if pending {
			out.Pending = append(out.Pending, id)
		}
	}
	if err := rows.Err(); err != nil {
		return store.Renewal{}, s.wrap("renew leases of "+owner, err)
	}
	slices.Sort(out.Held)
	slices.Sort(out.Pending)
	return out, nil
}

// Release implements store.Store. Releasing a lease that is no longer
// current fails with store.ErrLeaseLost and changes nothing.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := s.check(); err != nil {
		return err
	}
	var runs *string
	err := s.pool.QueryRow(ctx, s.q.release, l.RunID, l.Owner, l.Epoch).Scan(&runs)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.notFoundOr(ctx, l.RunID, fmt.Errorf("release run %q (owner %q, epoch %d): %w", l.RunID, l.Owner, l.Epoch, store.ErrLeaseLost))
	}
	if err != nil {
		return s.wrap("release run "+l.RunID, err)
	}
	s.announce(runs)
	return nil
}

// Send implements store.Store. The store assigns m.ID, and m.Time when it is
// zero. The message and the waking of a paused run are one transaction.
func (s *Store) Send(ctx context.Context, id string, m store.Message) (store.Message, error) {
	if err := s.check(); err != nil {
		return store.Message{}, err
	}
	if err := store.CheckMessage(id, m); err != nil {
		return store.Message{}, err
	}
	parts, err := store.EncodeParts(m.Parts)
	if err != nil {
		return store.Message{}, fmt.Errorf("send to run %q: %w", id, err)
	}
	var t *int64
	if !m.Time.IsZero() {
		n := sqlval.Nanos(m.Time)
		t = &n
	}
	var announced []*string
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		announced = announced[:0]
		var (
			rid, lastSeq int64
			state        string
		)
		err := tx.QueryRow(ctx, `SELECT rid, state, last_seq FROM swarm_runs WHERE id = $1 FOR UPDATE`, id).Scan(&rid, &state, &lastSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %q: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		st := store.State(state)
		if store.PauseNotCurrent(m, st, lastSeq) {
			return fmt.Errorf("resume run %q at pause %d (state %s, last record %d): %w", id, m.Pause, st, lastSeq, store.ErrPauseNotCurrent)
		}
		if m.Kind == store.MsgResume && st != store.Paused || m.Kind == store.MsgStop && st.Terminal() {
			return fmt.Errorf("%s for run %q in state %s: %w", m.Kind, id, st, store.ErrInvalidState)
		}
		var at int64
		if err := tx.QueryRow(ctx, `INSERT INTO swarm_inbox (rid, kind, text, time, parts)
			VALUES ($1, $2, $3, coalesce($4, `+nowNS+`), $5) RETURNING id, time`,
			rid, string(m.Kind), m.Text, t, parts).Scan(&m.ID, &at); err != nil {
			return err
		}
		m.Time = sqlval.FromNanos(at)
		rows, err := tx.Query(ctx, s.q.deliver, []int64{rid})
		if err != nil {
			return err
		}
		var inbox, runs *string
		_, err = pgx.ForEachRow(rows, []any{nil, &inbox, &runs}, func() error {
			announced = append(announced, inbox, runs)
			return nil
		})
		return err
	})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidState) {
		return store.Message{}, fmt.Errorf("send: %w", err)
	}
	if err != nil {
		return store.Message{}, s.wrap("send to run "+id, err)
	}
	s.announce(announced...)
	return m, nil
}

// Inbox implements store.Store. It is tried once more when its connection
// turns out broken.
func (s *Store) Inbox(ctx context.Context, id string) ([]store.Message, error) {
	return again(ctx, func() ([]store.Message, error) { return s.inbox(ctx, id) })
}

func (s *Store) inbox(ctx context.Context, id string) ([]store.Message, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q.inbox, id)
	if err != nil {
		return nil, s.wrap("inbox of run "+id, err)
	}
	defer rows.Close()
	out := []store.Message{}
	found := false
	for rows.Next() {
		found = true
		var (
			mid, t            *int64
			kind, text, parts *string
		)
		if err := rows.Scan(&mid, &kind, &text, &t, &parts); err != nil {
			return nil, s.wrap("inbox of run "+id, err)
		}
		if mid == nil {
			continue
		}
		ps, err := store.DecodeParts(*parts)
		if err != nil {
			return nil, fmt.Errorf("inbox of run %q: message %d: %w", id, *mid, err)
		}
		out = append(out, store.Message{ID: *mid, Kind: store.MessageKind(*kind), Text: *text, Time: sqlval.FromNanos(*t), Parts: ps})
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("inbox of run "+id, err)
	}
	if !found {
		return nil, fmt.Errorf("inbox of run %q: %w", id, store.ErrNotFound)
	}
	return out, nil
}
