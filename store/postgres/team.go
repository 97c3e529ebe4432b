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

var _ store.Teams = (*Store)(nil)

const (
	taskCols    = `id, key, subject, description, status, owner, owner_run, blocked_by, result, created_at, updated_at`
	requestCols = `id, kind, sender, recipient, content, state, response, deadline, created_at, updated_at`
	// finished is the condition that run r has finished.
	finished = `r.state IN ('completed', 'failed', 'stopped')`
	// openBlockers are the blockers of task t not completed, in order.
	openBlockers = `coalesce((SELECT array_agg(b.id ORDER BY b.id) FROM swarm_tasks b
		WHERE b.team = t.team AND b.id = ANY(t.blocked_by) AND b.status <> 'completed'), '{}')`
)

// addTaskSQL adds task ($3 subject, $4 description, $5 blockers) to team
// $1's board unless key $2 is on it already, in one statement: it takes
// the team's next ID by updating swarm_teams, whose row lock serializes
// the team's additions, and only if every blocker is at most the last ID
// (IDs are dense: those tasks exist). It returns one row: the task added
// or found (NULL columns if neither) and the unknown blockers. A
// concurrent addition of the same key, which this statement's snapshot
// misses, fails it on swarm_tasks_key; run again, it finds that task.
const addTaskSQL = `WITH k AS (SELECT ` + taskCols + ` FROM swarm_tasks WHERE team = $1 AND $2 <> '' AND key = $2),
	bad AS (SELECT coalesce(array_agg(b ORDER BY b), '{}') AS ids FROM unnest($5::bigint[]) b
		WHERE b > coalesce((SELECT last_task FROM swarm_teams WHERE team = $1), 0)),
	c AS (INSERT INTO swarm_teams AS tm (team, last_task) SELECT $1, 1 FROM bad
		WHERE cardinality(bad.ids) = 0 AND NOT EXISTS (SELECT 1 FROM k)
		ON CONFLICT (team) DO UPDATE SET last_task = tm.last_task + 1
		RETURNING last_task),
	t AS (SELECT ` + nowNS + ` AS now),
	n AS (INSERT INTO swarm_tasks (team, id, key, subject, description, status, blocked_by, created_at, updated_at)
		SELECT $1, c.last_task, $2, $3, $4, 'pending', coalesce($5::bigint[], '{}'), t.now, t.now FROM c, t
		RETURNING ` + taskCols + `)
	SELECT x.*, bad.ids FROM bad LEFT JOIN (SELECT * FROM n UNION ALL SELECT * FROM k) x ON true`

// claimSQL is ClaimTask's compare-and-set, one conditional update: the
// task must not be completed, nor owned by run $4 already (nothing to
// change), nor owned by another run that has not finished, nor have a
// blocker that is not completed. Under READ COMMITTED, a claim that waited
// for another's row lock checks these conditions again on the row that
// claim wrote, so of concurrent claims exactly one changes the row.
const claimSQL = `UPDATE swarm_tasks t SET status = 'in_progress', owner = $3, owner_run = $4, updated_at = ` + nowNS + `
	WHERE team = $1 AND id = $2 AND status <> 'completed' AND owner_run <> $4
		AND (owner_run = '' OR EXISTS (SELECT 1 FROM swarm_runs r WHERE r.id = t.owner_run AND ` + finished + `))
		AND NOT EXISTS (SELECT 1 FROM swarm_tasks b WHERE b.team = t.team AND b.id = ANY(t.blocked_by) AND b.status <> 'completed')
	RETURNING ` + taskCols

// taskSQL reads a task, whether its owner run has finished, and its
// blockers that are not completed.
const taskSQL = `SELECT ` + taskCols + `,
		EXISTS (SELECT 1 FROM swarm_runs r WHERE r.id = t.owner_run AND ` + finished + `), ` + openBlockers + `
	FROM swarm_tasks t WHERE team = $1 AND id = $2`

const completeSQL = `UPDATE swarm_tasks SET status = 'completed', result = $4, updated_at = ` + nowNS + `
	WHERE team = $1 AND id = $2 AND owner_run = $3 AND status = 'in_progress'
	RETURNING ` + taskCols

const releaseSQL = `UPDATE swarm_tasks SET status = 'pending', owner = '', owner_run = '', updated_at = ` + nowNS + `
	WHERE team = $1 AND owner_run = $2 AND status = 'in_progress'`

// due is the condition that request r's deadline has passed at t.now.
const due = `r.state = 'pending' AND r.deadline > 0 AND r.deadline <= t.now`

// addRequestSQL adds a request, expired at once if its deadline ($7) has
// passed; a request of that ID already there is left alone (no row).
const addRequestSQL = `WITH t AS (SELECT ` + nowNS + ` AS now)
	INSERT INTO swarm_requests (team, id, kind, sender, recipient, content, state, deadline, created_at, updated_at)
	SELECT $1, $2, $3, $4, $5, $6, CASE WHEN $7::bigint > 0 AND $7::bigint <= t.now THEN 'expired' ELSE 'pending' END, $7, t.now, t.now FROM t
	ON CONFLICT (team, id) DO NOTHING
	RETURNING ` + requestCols

// requestSQL reads a request, storing it as expired first if its deadline
// has passed.
const requestSQL = `WITH t AS (SELECT ` + nowNS + ` AS now),
	e AS (UPDATE swarm_requests r SET state = 'expired', updated_at = t.now FROM t
		WHERE r.team = $1 AND r.id = $2 AND ` + due + ` RETURNING ` + requestCols + `)
	SELECT * FROM e
	UNION ALL SELECT ` + requestCols + ` FROM swarm_requests WHERE team = $1 AND id = $2 AND NOT EXISTS (SELECT 1 FROM e)`

// requestsSQL lists a team's requests in order of creation, storing those
// past their deadline as expired first, in the same statement.
const requestsSQL = `WITH t AS (SELECT ` + nowNS + ` AS now),
	e AS (UPDATE swarm_requests r SET state = 'expired', updated_at = t.now FROM t
		WHERE r.team = $1 AND ` + due + ` RETURNING r.n, r.state, r.updated_at)
	SELECT r.id, r.kind, r.sender, r.recipient, r.content, coalesce(e.state, r.state), r.response, r.deadline,
		r.created_at, coalesce(e.updated_at, r.updated_at)
	FROM swarm_requests r LEFT JOIN e ON e.n = r.n WHERE r.team = $1 ORDER BY r.n`

// resolveSQL resolves a pending request to state $3 with response $4, or
// stores it as expired if its deadline has passed.
const resolveSQL = `WITH t AS (SELECT ` + nowNS + ` AS now)
	UPDATE swarm_requests r SET updated_at = t.now,
		state = CASE WHEN ` + due + ` THEN 'expired' ELSE $3 END,
		response = CASE WHEN ` + due + ` THEN r.response ELSE $4 END
	FROM t WHERE r.team = $1 AND r.id = $2 AND r.state = 'pending'
	RETURNING ` + requestCols

func scanTask(row rowScanner, extra ...any) (store.Task, error) {
	var (
		t            store.Task
		status       string
		created, upd int64
	)
	dest := append([]any{&t.ID, &t.Key, &t.Subject, &t.Description, &status, &t.Owner, &t.OwnerRun, &t.BlockedBy, &t.Result,
		&created, &upd}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Task{}, err
	}
	if len(t.BlockedBy) == 0 {
		t.BlockedBy = nil
	}
	t.Status, t.CreatedAt, t.UpdatedAt = store.TaskStatus(status), sqlval.FromNanos(created), sqlval.FromNanos(upd)
	return t, nil
}

func scanRequest(row rowScanner) (store.Request, error) {
	var (
		r                      store.Request
		state                  string
		deadline, created, upd int64
	)
	if err := row.Scan(&r.ID, &r.Kind, &r.From, &r.To, &r.Content, &state, &r.Response, &deadline, &created, &upd); err != nil {
		return store.Request{}, err
	}
	r.State, r.Deadline = store.RequestState(state), sqlval.FromNanos(deadline)
	r.CreatedAt, r.UpdatedAt = sqlval.FromNanos(created), sqlval.FromNanos(upd)
	return r, nil
}

// sameKey reports whether err is a violation of the uniqueness of task
// keys per board.
func sameKey(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "swarm_tasks_key"
}

// AddTask implements store.Teams in one statement. An addition that raced
// with one of the same key is tried again, and finds that task; so is a
// keyed addition broken off with its connection (a key makes it
// idempotent).
func (s *Store) AddTask(ctx context.Context, team string, t store.Task) (store.Task, error) {
	if err := s.check(); err != nil {
		return store.Task{}, err
	}
	if err := store.CheckTask(team, t); err != nil {
		return store.Task{}, err
	}
	var (
		out store.Task
		err error
	)
	for range 3 {
		out, err = s.addTask(ctx, team, t)
		if err == nil || ctx.Err() != nil || !sameKey(err) && !(t.Key != "" && unavailable(err)) {
			break
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return store.Task{}, err
	}
	if err != nil {
		return store.Task{}, s.wrap(fmt.Sprintf("add task %q to team %q", t.Subject, team), err)
	}
	return out, nil
}

func (s *Store) addTask(ctx context.Context, team string, t store.Task) (store.Task, error) {
	var (
		id, created, upd                                      *int64
		key, subject, description, status, owner, run, result *string
		blockers, bad                                         []int64
	)
	err := s.pool.QueryRow(ctx, addTaskSQL, team, t.Key, t.Subject, t.Description, store.Blockers(t.BlockedBy)).Scan(
		&id, &key, &subject, &description, &status, &owner, &run, &blockers, &result, &created, &upd, &bad)
	if err != nil {
		return store.Task{}, err
	}
	if id == nil {
		if len(bad) == 0 {
			return store.Task{}, errors.New("the addition returned no task")
		}
		return store.Task{}, store.UnknownBlockers(team, t, bad)
	}
	out := store.Task{ID: *id, Key: *key, Subject: *subject, Description: *description, Status: store.TaskStatus(*status),
		Owner: *owner, OwnerRun: *run, Result: *result, CreatedAt: sqlval.FromNanos(*created), UpdatedAt: sqlval.FromNanos(*upd)}
	if len(blockers) > 0 {
		out.BlockedBy = blockers
	}
	return out, nil
}

// Tasks implements store.Teams. It is tried once more when its connection
// turns out broken.
func (s *Store) Tasks(ctx context.Context, team string) ([]store.Task, error) {
	return again(ctx, func() ([]store.Task, error) { return s.tasks(ctx, team) })
}

func (s *Store) tasks(ctx context.Context, team string) ([]store.Task, error) {
	return queryAll(ctx, s, "tasks of team "+team, func(r rowScanner) (store.Task, error) { return scanTask(r) },
		`SELECT `+taskCols+` FROM swarm_tasks WHERE team = $1 ORDER BY id`, team)
}

// queryAll runs query q and scans every row with scan.
func queryAll[T any](ctx context.Context, s *Store, op string, scan func(rowScanner) (T, error), q string, args ...any) ([]T, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, s.wrap(op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// ClaimTask implements store.Teams with one conditional update (claimSQL).
// When it changes nothing, the task says why, unless it changed
// meanwhile: then the claim is tried again. A repeated claim is
// idempotent, so a claim broken off with its connection is tried again
// too.
func (s *Store) ClaimTask(ctx context.Context, team string, id int64, member, ownerRun string) (store.Task, error) {
	if err := s.check(); err != nil {
		return store.Task{}, err
	}
	if err := store.CheckClaim(team, store.Task{ID: id}, member, ownerRun, false, nil); err != nil {
		return store.Task{}, err
	}
	return again(ctx, func() (store.Task, error) {
		for range 3 {
			t, err := scanTask(s.pool.QueryRow(ctx, claimSQL, team, id, member, ownerRun))
			if err == nil || !errors.Is(err, pgx.ErrNoRows) {
				return t, s.maybeWrap("claim task", team, id, err)
			}
			var (
				done bool
				open []int64
			)
			t, err = scanTask(s.pool.QueryRow(ctx, taskSQL, team, id), &done, &open)
			if errors.Is(err, pgx.ErrNoRows) {
				return store.Task{}, store.NoTask("claim", team, id)
			}
			if err != nil {
				return store.Task{}, s.maybeWrap("claim task", team, id, err)
			}
			if err := store.CheckClaim(team, t, member, ownerRun, done, open); err != nil {
				return store.Task{}, err
			}
			if t.OwnerRun == ownerRun && t.Status == store.TaskInProgress {
				return t, nil // a repeated claim
			}
		}
		return store.Task{}, fmt.Errorf("claim task %d of team %q: the task keeps changing: %w", id, team, store.ErrConflict)
	})
}

// maybeWrap wraps a database error of an operation on task id.
func (s *Store) maybeWrap(op, team string, id int64, err error) error {
	if err == nil {
		return nil
	}
	return s.wrap(fmt.Sprintf("%s %d of team %q", op, id, team), err)
}

// CompleteTask implements store.Teams with one conditional update; when
// it changes nothing, the task says why. Completing twice is idempotent,
// so a completion broken off with its connection is tried again.
func (s *Store) CompleteTask(ctx context.Context, team string, id int64, ownerRun, result string) (store.Task, error) {
	if err := s.check(); err != nil {
		return store.Task{}, err
	}
	if _, err := store.CheckComplete(team, store.Task{ID: id, OwnerRun: ownerRun}, ownerRun, result); err != nil {
		return store.Task{}, err
	}
	return again(ctx, func() (store.Task, error) {
		for range 3 {
			t, err := scanTask(s.pool.QueryRow(ctx, completeSQL, team, id, ownerRun, result))
			if err == nil || !errors.Is(err, pgx.ErrNoRows) {
				return t, s.maybeWrap("complete task", team, id, err)
			}
			t, err = scanTask(s.pool.QueryRow(ctx, taskSQL, team, id), nil, nil)
			if errors.Is(err, pgx.ErrNoRows) {
				return store.Task{}, store.NoTask("complete", team, id)
			}
			if err != nil {
				return store.Task{}, s.maybeWrap("complete task", team, id, err)
			}
			if done, err := store.CheckComplete(team, t, ownerRun, result); done || err != nil {
				return t, err
			}
		}
		return store.Task{}, fmt.Errorf("complete task %d of team %q: the task keeps changing: %w", id, team, store.ErrConflict)
	})
}

// ReleaseTasks implements store.Teams in one statement.
func (s *Store) ReleaseTasks(ctx context.Context, team, ownerRun string) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, releaseSQL, team, ownerRun)
	if err != nil {
		return 0, s.wrap(fmt.Sprintf("release tasks of run %q in team %q", ownerRun, team), err)
	}
	return int(tag.RowsAffected()), nil
}

// AddRequest implements store.Teams: an insert that does nothing when the
// ID is taken, then a read of the stored request. An ID makes it
// idempotent, so it is tried again when its connection turns out broken.
func (s *Store) AddRequest(ctx context.Context, team string, r store.Request) (store.Request, error) {
	if err := s.check(); err != nil {
		return store.Request{}, err
	}
	if err := store.CheckRequest(team, r); err != nil {
		return store.Request{}, err
	}
	return again(ctx, func() (store.Request, error) {
		got, err := scanRequest(s.pool.QueryRow(ctx, addRequestSQL, team, r.ID, r.Kind, r.From, r.To, r.Content, sqlval.Nanos(r.Deadline)))
		if errors.Is(err, pgx.ErrNoRows) {
			// The ID is taken (committed, since the insert waited for
			// any concurrent one): this statement sees it.
			got, err = scanRequest(s.pool.QueryRow(ctx, requestSQL, team, r.ID))
		}
		if err != nil {
			return store.Request{}, s.wrap(fmt.Sprintf("add request %q to team %q", r.ID, team), err)
		}
		return got, nil
	})
}

// Requests implements store.Teams in one statement, which stores the
// requests past their deadline as expired. It is tried once more when its
// connection turns out broken.
func (s *Store) Requests(ctx context.Context, team string) ([]store.Request, error) {
	return again(ctx, func() ([]store.Request, error) { return s.requests(ctx, team) })
}

func (s *Store) requests(ctx context.Context, team string) ([]store.Request, error) {
	return queryAll(ctx, s, "requests of team "+team, scanRequest, requestsSQL, team)
}

// ResolveRequest implements store.Teams with one conditional update, which
// also stores a request past its deadline as expired. It is not tried
// again on a broken connection: a resolution that committed would then
// be reported as refused.
func (s *Store) ResolveRequest(ctx context.Context, team, id string, state store.RequestState, response string) (store.Request, error) {
	if err := s.check(); err != nil {
		return store.Request{}, err
	}
	if err := store.CheckResolve(team, id, state, response); err != nil {
		return store.Request{}, err
	}
	op := fmt.Sprintf("resolve request %q of team %q", id, team)
	r, err := scanRequest(s.pool.QueryRow(ctx, resolveSQL, team, id, string(state), response))
	if err == nil {
		if r.State == store.RequestExpired {
			return r, store.NotPending(team, r)
		}
		return r, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.Request{}, s.wrap(op, err)
	}
	r, err = scanRequest(s.pool.QueryRow(ctx, requestSQL, team, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Request{}, store.NoRequest(team, id)
	}
	if err != nil {
		return store.Request{}, s.wrap(op, err)
	}
	return r, store.NotPending(team, r)
}
