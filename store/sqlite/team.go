package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Teams = (*Store)(nil)

// teamSchema is schema version 5: teams' task boards and protocol
// requests, keyed by team (the lead run's id, which needs no row of its
// own). A board's task IDs are dense from 1, so the next one is the
// largest plus one, read and used in the writer's transaction; blocked_by
// is a JSON array of task IDs. requests.n numbers requests in order of
// creation.
var teamSchema = []string{
	`CREATE TABLE tasks (
		team        TEXT NOT NULL,
		id          INTEGER NOT NULL,
		key         TEXT NOT NULL DEFAULT '',
		subject     TEXT NOT NULL,
		description TEXT NOT NULL DEFAULT '',
		status      TEXT NOT NULL,
		owner       TEXT NOT NULL DEFAULT '',
		owner_run   TEXT NOT NULL DEFAULT '',
		blocked_by  TEXT NOT NULL DEFAULT '[]',
		result      TEXT NOT NULL DEFAULT '',
		created_at  INTEGER NOT NULL,
		updated_at  INTEGER NOT NULL,
		UNIQUE (team, id)
	)`,
	`CREATE UNIQUE INDEX tasks_key ON tasks (team, key) WHERE key <> ''`,
	`CREATE INDEX tasks_owner ON tasks (team, owner_run) WHERE status = 'in_progress'`,
	`CREATE TABLE requests (
		n          INTEGER PRIMARY KEY,
		team       TEXT NOT NULL,
		id         TEXT NOT NULL,
		kind       TEXT NOT NULL,
		sender     TEXT NOT NULL,
		recipient  TEXT NOT NULL,
		content    TEXT NOT NULL DEFAULT '',
		state      TEXT NOT NULL,
		response   TEXT NOT NULL DEFAULT '',
		deadline   INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		UNIQUE (team, id)
	)`,
	`CREATE INDEX requests_due ON requests (team, deadline) WHERE state = 'pending' AND deadline > 0`,
}

const (
	taskCols    = `id, key, subject, description, status, owner, owner_run, blocked_by, result, created_at, updated_at`
	requestCols = `id, kind, sender, recipient, content, state, response, deadline, created_at, updated_at`
	// dueRequests expires team ?1's pending requests whose deadline is
	// at or before ?2.
	dueRequests = `UPDATE requests SET state = 'expired', updated_at = ?2
		WHERE team = ?1 AND state = 'pending' AND deadline > 0 AND deadline <= ?2`
)

// teamStmts are the writer's statements for teams.
type teamStmts struct {
	last, byKey, task, insertTask, runState, open, claim, complete, release *sql.Stmt
	request, insertRequest, expire, resolve, due                            *sql.Stmt
}

// teamStmts prepares the team statements on first use.
func (w *writer) teamStmts() (*teamStmts, error) {
	if w.team != nil {
		return w.team, nil
	}
	m := &teamStmts{}
	for _, p := range []struct {
		s **sql.Stmt
		q string
	}{
		{&m.last, `SELECT coalesce(max(id), 0) FROM tasks WHERE team = ?`},
		{&m.byKey, `SELECT ` + taskCols + ` FROM tasks WHERE team = ? AND key = ? AND key <> ''`},
		{&m.task, `SELECT ` + taskCols + ` FROM tasks WHERE team = ? AND id = ?`},
		{&m.insertTask, `INSERT INTO tasks (team, id, key, subject, description, status, blocked_by, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?)`},
		{&m.runState, `SELECT state FROM runs WHERE id = ?`},
		// The blockers of a task that are not completed.
		{&m.open, `SELECT id FROM tasks WHERE team = ? AND id IN (SELECT value FROM json_each(?)) AND status <> 'completed'
			ORDER BY id`},
		{&m.claim, `UPDATE tasks SET status = 'in_progress', owner = ?, owner_run = ?, updated_at = ? WHERE team = ? AND id = ?`},
		{&m.complete, `UPDATE tasks SET status = 'completed', result = ?, updated_at = ? WHERE team = ? AND id = ?`},
		{&m.release, `UPDATE tasks SET status = 'pending', owner = '', owner_run = '', updated_at = ?
			WHERE team = ? AND owner_run = ? AND status = 'in_progress'`},
		{&m.request, `SELECT ` + requestCols + ` FROM requests WHERE team = ? AND id = ?`},
		{&m.insertRequest, `INSERT INTO requests (team, id, kind, sender, recipient, content, state, deadline, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&m.expire, `UPDATE requests SET state = 'expired', updated_at = ? WHERE team = ? AND id = ?`},
		{&m.resolve, `UPDATE requests SET state = ?, response = ?, updated_at = ? WHERE team = ? AND id = ?`},
		{&m.due, dueRequests},
	} {
		st, err := w.conn.PrepareContext(context.Background(), p.q)
		if err != nil {
			return nil, fmt.Errorf("prepare %q: %w", p.q, err)
		}
		*p.s = st
		w.all = append(w.all, st)
	}
	w.team = m
	return m, nil
}

func scanTask(sc scanner) (store.Task, error) {
	var (
		t              store.Task
		status, blocks string
		created, upd   int64
	)
	if err := sc.Scan(&t.ID, &t.Key, &t.Subject, &t.Description, &status, &t.Owner, &t.OwnerRun, &blocks, &t.Result,
		&created, &upd); err != nil {
		return store.Task{}, err
	}
	if err := json.Unmarshal([]byte(blocks), &t.BlockedBy); err != nil {
		return store.Task{}, fmt.Errorf("task %d: decode blocked_by: %w", t.ID, err)
	}
	if len(t.BlockedBy) == 0 {
		t.BlockedBy = nil
	}
	t.Status, t.CreatedAt, t.UpdatedAt = store.TaskStatus(status), sqlval.FromNanos(created), sqlval.FromNanos(upd)
	return t, nil
}

func scanRequest(sc scanner) (store.Request, error) {
	var (
		r                      store.Request
		state                  string
		deadline, created, upd int64
	)
	if err := sc.Scan(&r.ID, &r.Kind, &r.From, &r.To, &r.Content, &state, &r.Response, &deadline, &created, &upd); err != nil {
		return store.Request{}, err
	}
	r.State, r.Deadline = store.RequestState(state), sqlval.FromNanos(deadline)
	r.CreatedAt, r.UpdatedAt = sqlval.FromNanos(created), sqlval.FromNanos(upd)
	return r, nil
}

// ids reads a column of IDs.
func ids(rows *sql.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// teamWrite runs fn with the team statements in one write request (one
// transaction).
func (s *Store) teamWrite(ctx context.Context, fn func(w *writer, st *teamStmts) error) error {
	return s.write(ctx, func(w *writer) error {
		st, err := w.teamStmts()
		if err != nil {
			return err
		}
		return fn(w, st)
	})
}

// AddTask implements store.Teams: the next ID is read and taken in the
// writer's transaction, which serializes every process's writes.
func (s *Store) AddTask(ctx context.Context, team string, t store.Task) (store.Task, error) {
	if err := store.CheckTask(team, t); err != nil {
		return store.Task{}, err
	}
	var out store.Task
	err := s.teamWrite(ctx, func(w *writer, st *teamStmts) error {
		if t.Key != "" {
			got, err := scanTask(st.byKey.QueryRow(team, t.Key))
			if err == nil {
				out = got
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		var last int64
		if err := st.last.QueryRow(team).Scan(&last); err != nil {
			return err
		}
		blockers := store.Blockers(t.BlockedBy)
		var missing []int64
		for _, b := range blockers {
			if b > last {
				missing = append(missing, b)
			}
		}
		if len(missing) > 0 {
			return store.UnknownBlockers(team, t, missing)
		}
		bs, err := json.Marshal(blockers)
		if err != nil {
			return err
		}
		if blockers == nil {
			bs = []byte("[]")
		}
		now := sqlval.Nanos(w.now)
		if _, err := st.insertTask.Exec(team, last+1, t.Key, t.Subject, t.Description, string(bs), now, now); err != nil {
			return err
		}
		out = store.Task{ID: last + 1, Key: t.Key, Subject: t.Subject, Description: t.Description, Status: store.TaskPending,
			BlockedBy: blockers, CreatedAt: sqlval.FromNanos(now), UpdatedAt: sqlval.FromNanos(now)}
		return nil
	})
	if err != nil {
		return store.Task{}, fmt.Errorf("add task: %w", err)
	}
	return out, nil
}

// Tasks implements store.Teams.
func (s *Store) Tasks(ctx context.Context, team string) ([]store.Task, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+taskCols+` FROM tasks WHERE team = ? ORDER BY id`, team)
	if err != nil {
		return nil, fmt.Errorf("tasks of team %q: %w", team, err)
	}
	defer rows.Close()
	out := []store.Task{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("tasks of team %q: %w", team, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks of team %q: %w", team, err)
	}
	return out, nil
}

// task reads task id of team in the writer's transaction.
func (st *teamStmts) read(op, team string, id int64) (store.Task, error) {
	t, err := scanTask(st.task.QueryRow(team, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Task{}, store.NoTask(op, team, id)
	}
	return t, err
}

// ClaimTask implements store.Teams: the check and the change are one
// write request, hence one transaction, and writes are serialized across
// processes, so the compare-and-set is atomic.
func (s *Store) ClaimTask(ctx context.Context, team string, id int64, member, ownerRun string) (store.Task, error) {
	var out store.Task
	err := s.teamWrite(ctx, func(w *writer, st *teamStmts) error {
		t, err := st.read("claim", team, id)
		if err != nil {
			return err
		}
		done := false
		if t.OwnerRun != "" && t.OwnerRun != ownerRun {
			var state string
			err := st.runState.QueryRow(t.OwnerRun).Scan(&state)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			done = store.State(state).Terminal()
		}
		var open []int64
		if len(t.BlockedBy) > 0 {
			bs, _ := json.Marshal(t.BlockedBy)
			if open, err = ids(st.open.Query(team, string(bs))); err != nil {
				return err
			}
		}
		if err := store.CheckClaim(team, t, member, ownerRun, done, open); err != nil {
			return err
		}
		if t.OwnerRun != ownerRun || t.Status != store.TaskInProgress {
			if _, err := st.claim.Exec(member, ownerRun, sqlval.Nanos(w.now), team, id); err != nil {
				return err
			}
			t.Status, t.Owner, t.OwnerRun, t.UpdatedAt = store.TaskInProgress, member, ownerRun, sqlval.FromNanos(sqlval.Nanos(w.now))
		}
		out = t
		return nil
	})
	if err != nil {
		return store.Task{}, err
	}
	return out, nil
}

// CompleteTask implements store.Teams.
func (s *Store) CompleteTask(ctx context.Context, team string, id int64, ownerRun, result string) (store.Task, error) {
	var out store.Task
	err := s.teamWrite(ctx, func(w *writer, st *teamStmts) error {
		t, err := st.read("complete", team, id)
		if err != nil {
			return err
		}
		done, err := store.CheckComplete(team, t, ownerRun, result)
		if err != nil {
			return err
		}
		if !done {
			if _, err := st.complete.Exec(result, sqlval.Nanos(w.now), team, id); err != nil {
				return err
			}
			t.Status, t.Result, t.UpdatedAt = store.TaskCompleted, result, sqlval.FromNanos(sqlval.Nanos(w.now))
		}
		out = t
		return nil
	})
	if err != nil {
		return store.Task{}, err
	}
	return out, nil
}

// ReleaseTasks implements store.Teams.
func (s *Store) ReleaseTasks(ctx context.Context, team, ownerRun string) (int, error) {
	var n int64
	err := s.teamWrite(ctx, func(w *writer, st *teamStmts) error {
		res, err := st.release.Exec(sqlval.Nanos(w.now), team, ownerRun)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("release tasks of run %q in team %q: %w", ownerRun, team, err)
	}
	return int(n), nil
}

// readRequest reads request id of team in the writer's transaction and,
// if its deadline has passed, stores it as expired.
func (w *writer) readRequest(st *teamStmts, team, id string) (store.Request, error) {
	r, err := scanRequest(st.request.QueryRow(team, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Request{}, store.NoRequest(team, id)
	}
	if err != nil || !r.Expired(w.now) {
		return r, err
	}
	now := sqlval.Nanos(w.now)
	if _, err := st.expire.Exec(now, team, id); err != nil {
		return store.Request{}, err
	}
	r.State, r.UpdatedAt = store.RequestExpired, sqlval.FromNanos(now)
	return r, nil
}

// AddRequest implements store.Teams.
func (s *Store) AddRequest(ctx context.Context, team string, r store.Request) (store.Request, error) {
	if err := store.CheckRequest(team, r); err != nil {
		return store.Request{}, err
	}
	var out store.Request
	err := s.teamWrite(ctx, func(w *writer, st *teamStmts) error {
		got, err := w.readRequest(st, team, r.ID)
		if !errors.Is(err, store.ErrNotFound) {
			out = got
			return err
		}
		now := sqlval.FromNanos(sqlval.Nanos(w.now))
		out = store.Request{ID: r.ID, Kind: r.Kind, From: r.From, To: r.To, Content: r.Content, State: store.RequestPending,
			Deadline: r.Deadline, CreatedAt: now, UpdatedAt: now}
		if out.Expired(now) {
			out.State = store.RequestExpired
		}
		_, err = st.insertRequest.Exec(team, r.ID, r.Kind, r.From, r.To, r.Content, string(out.State),
			sqlval.Nanos(r.Deadline), sqlval.Nanos(now), sqlval.Nanos(now))
		return err
	})
	if err != nil {
		return store.Request{}, fmt.Errorf("add request %q to team %q: %w", r.ID, team, err)
	}
	return out, nil
}

// requestsQuery lists a team's requests in order of creation.
const requestsQuery = `SELECT ` + requestCols + ` FROM requests WHERE team = ? ORDER BY n`

func scanRequests(rows *sql.Rows, err error) ([]store.Request, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.Request{}
	for rows.Next() {
		r, err := scanRequest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Requests implements store.Teams. It reads without the writer unless a
// pending request is past its deadline; then it stores the expired ones
// and reads again, in one write request.
func (s *Store) Requests(ctx context.Context, team string) ([]store.Request, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	out, err := scanRequests(s.rdb.QueryContext(ctx, requestsQuery, team))
	if err != nil {
		return nil, fmt.Errorf("requests of team %q: %w", team, err)
	}
	now := time.Now()
	due := false
	for _, r := range out {
		due = due || r.Expired(now)
	}
	if !due {
		return out, nil
	}
	err = s.teamWrite(ctx, func(w *writer, st *teamStmts) error {
		if _, err := st.due.Exec(team, sqlval.Nanos(w.now)); err != nil {
			return err
		}
		out, err = scanRequests(w.conn.QueryContext(ctx, requestsQuery, team))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("requests of team %q: %w", team, err)
	}
	return out, nil
}

// ResolveRequest implements store.Teams. A request found expired is
// stored so, and the transaction commits, before the refusal is
// returned.
func (s *Store) ResolveRequest(ctx context.Context, team, id string, state store.RequestState, response string) (store.Request, error) {
	if err := store.CheckResolve(team, id, state, response); err != nil {
		return store.Request{}, err
	}
	var (
		out      store.Request
		resolved bool
	)
	err := s.teamWrite(ctx, func(w *writer, st *teamStmts) error {
		r, err := w.readRequest(st, team, id)
		if err != nil || r.State != store.RequestPending {
			out = r
			return err
		}
		resolved = true
		now := sqlval.Nanos(w.now)
		if _, err := st.resolve.Exec(string(state), response, now, team, id); err != nil {
			return err
		}
		r.State, r.Response, r.UpdatedAt = state, response, sqlval.FromNanos(now)
		out = r
		return nil
	})
	if err != nil {
		return store.Request{}, err
	}
	if !resolved {
		return out, store.NotPending(team, out)
	}
	return out, nil
}
