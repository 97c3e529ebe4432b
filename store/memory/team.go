package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/swarmrt/swarm/store"
)

var _ store.Teams = (*Store)(nil)

// team is a team's task board and protocol requests. Its mutex is taken
// before any run's (ClaimTask reads the owner run's state under it).
type team struct {
	mu    sync.Mutex
	tasks []store.Task     // tasks[i] has ID i+1
	keys  map[string]int64 // task Key -> ID
	reqs  []store.Request  // in order of creation
	ids   map[string]int   // request ID -> index in reqs
}

// team returns the team named id, creating it if create is set (nil if
// it does not exist and create is not set), locked.
func (s *Store) team(ctx context.Context, id string, create bool) (*team, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.teamsMu.Lock()
	tm := s.teams[id]
	if tm == nil && create {
		if s.teams == nil {
			s.teams = map[string]*team{}
		}
		tm = &team{keys: map[string]int64{}, ids: map[string]int{}}
		s.teams[id] = tm
	}
	s.teamsMu.Unlock()
	if tm != nil {
		tm.mu.Lock()
	}
	return tm, nil
}

func cloneTask(t store.Task) store.Task {
	t.BlockedBy = slices.Clone(t.BlockedBy)
	return t
}

// AddTask implements store.Teams.
func (s *Store) AddTask(ctx context.Context, teamID string, t store.Task) (store.Task, error) {
	if err := store.CheckTask(teamID, t); err != nil {
		return store.Task{}, err
	}
	tm, err := s.team(ctx, teamID, true)
	if err != nil {
		return store.Task{}, err
	}
	defer tm.mu.Unlock()
	if id, ok := tm.keys[t.Key]; ok && t.Key != "" {
		return cloneTask(tm.tasks[id-1]), nil
	}
	blockers := store.Blockers(t.BlockedBy)
	var missing []int64
	for _, b := range blockers {
		if b > int64(len(tm.tasks)) {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return store.Task{}, store.UnknownBlockers(teamID, t, missing)
	}
	now := time.Now()
	nt := store.Task{ID: int64(len(tm.tasks)) + 1, Key: t.Key, Subject: t.Subject, Description: t.Description,
		Status: store.TaskPending, BlockedBy: blockers, CreatedAt: now, UpdatedAt: now}
	tm.tasks = append(tm.tasks, nt)
	if t.Key != "" {
		tm.keys[t.Key] = nt.ID
	}
	return cloneTask(nt), nil
}

// Tasks implements store.Teams.
func (s *Store) Tasks(ctx context.Context, teamID string) ([]store.Task, error) {
	tm, err := s.team(ctx, teamID, false)
	if err != nil || tm == nil {
		return []store.Task{}, err
	}
	defer tm.mu.Unlock()
	out := make([]store.Task, len(tm.tasks))
	for i, t := range tm.tasks {
		out[i] = cloneTask(t)
	}
	return out, nil
}

// task returns task id of team teamID, locked, or store.NoTask.
func (s *Store) task(ctx context.Context, op, teamID string, id int64) (*team, *store.Task, error) {
	tm, err := s.team(ctx, teamID, false)
	if err != nil {
		return nil, nil, err
	}
	if tm == nil {
		return nil, nil, store.NoTask(op, teamID, id)
	}
	if id < 1 || id > int64(len(tm.tasks)) {
		tm.mu.Unlock()
		return nil, nil, store.NoTask(op, teamID, id)
	}
	return tm, &tm.tasks[id-1], nil
}

// finished reports whether run id has finished; a run the store does not
// know has not.
func (s *Store) finished(id string) bool {
	r, err := s.lookup(id)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.row.State.Terminal()
}

// ClaimTask implements store.Teams: the team's lock makes it atomic.
func (s *Store) ClaimTask(ctx context.Context, teamID string, id int64, member, ownerRun string) (store.Task, error) {
	tm, t, err := s.task(ctx, "claim", teamID, id)
	if err != nil {
		return store.Task{}, err
	}
	defer tm.mu.Unlock()
	done := t.OwnerRun != "" && t.OwnerRun != ownerRun && s.finished(t.OwnerRun)
	var open []int64
	for _, b := range t.BlockedBy {
		if tm.tasks[b-1].Status != store.TaskCompleted {
			open = append(open, b)
		}
	}
	if err := store.CheckClaim(teamID, *t, member, ownerRun, done, open); err != nil {
		return store.Task{}, err
	}
	if t.OwnerRun != ownerRun || t.Status != store.TaskInProgress {
		t.Status, t.Owner, t.OwnerRun, t.UpdatedAt = store.TaskInProgress, member, ownerRun, time.Now()
	}
	return cloneTask(*t), nil
}

// CompleteTask implements store.Teams.
func (s *Store) CompleteTask(ctx context.Context, teamID string, id int64, ownerRun, result string) (store.Task, error) {
	tm, t, err := s.task(ctx, "complete", teamID, id)
	if err != nil {
		return store.Task{}, err
	}
	defer tm.mu.Unlock()
	done, err := store.CheckComplete(teamID, *t, ownerRun, result)
	if err != nil {
		return store.Task{}, err
	}
	if !done {
		t.Status, t.Result, t.UpdatedAt = store.TaskCompleted, result, time.Now()
	}
	return cloneTask(*t), nil
}

// ReleaseTasks implements store.Teams.
func (s *Store) ReleaseTasks(ctx context.Context, teamID, ownerRun string) (int, error) {
	tm, err := s.team(ctx, teamID, false)
	if err != nil || tm == nil {
		return 0, err
	}
	defer tm.mu.Unlock()
	n := 0
	now := time.Now()
	for i := range tm.tasks {
		if t := &tm.tasks[i]; t.OwnerRun == ownerRun && t.Status == store.TaskInProgress {
			t.Status, t.Owner, t.OwnerRun, t.UpdatedAt = store.TaskPending, "", "", now
			n++
		}
	}
	return n, nil
}

// expire stores request r as expired if its deadline has passed. The
// caller holds the team's lock.
func expire(r *store.Request, now time.Time) {
	if r.Expired(now) {
		r.State, r.UpdatedAt = store.RequestExpired, now
	}
}

// AddRequest implements store.Teams.
func (s *Store) AddRequest(ctx context.Context, teamID string, r store.Request) (store.Request, error) {
	if err := store.CheckRequest(teamID, r); err != nil {
		return store.Request{}, err
	}
	tm, err := s.team(ctx, teamID, true)
	if err != nil {
		return store.Request{}, err
	}
	defer tm.mu.Unlock()
	now := time.Now()
	if i, ok := tm.ids[r.ID]; ok {
		expire(&tm.reqs[i], now)
		return tm.reqs[i], nil
	}
	nr := store.Request{ID: r.ID, Kind: r.Kind, From: r.From, To: r.To, Content: r.Content,
		State: store.RequestPending, Deadline: r.Deadline, CreatedAt: now, UpdatedAt: now}
	expire(&nr, now)
	tm.ids[r.ID] = len(tm.reqs)
	tm.reqs = append(tm.reqs, nr)
	return nr, nil
}

// Requests implements store.Teams.
func (s *Store) Requests(ctx context.Context, teamID string) ([]store.Request, error) {
	tm, err := s.team(ctx, teamID, false)
	if err != nil || tm == nil {
		return []store.Request{}, err
	}
	defer tm.mu.Unlock()
	now := time.Now()
	for i := range tm.reqs {
		expire(&tm.reqs[i], now)
	}
	return slices.Clone(tm.reqs), nil
}

// ResolveRequest implements store.Teams.
func (s *Store) ResolveRequest(ctx context.Context, teamID, id string, state store.RequestState, response string) (store.Request, error) {
	if err := store.CheckResolve(teamID, id, state, response); err != nil {
		return store.Request{}, err
	}
	tm, err := s.team(ctx, teamID, false)
	if err != nil {
		return store.Request{}, err
	}
	if tm == nil {
		return store.Request{}, store.NoRequest(teamID, id)
	}
	defer tm.mu.Unlock()
	i, ok := tm.ids[id]
	if !ok {
		return store.Request{}, store.NoRequest(teamID, id)
	}
	r := &tm.reqs[i]
	now := time.Now()
	expire(r, now)
	if r.State != store.RequestPending {
		return *r, store.NotPending(teamID, *r)
	}
	r.State, r.Response, r.UpdatedAt = state, response, now
	return *r, nil
}

// teamMap holds a Store's teams; it is embedded in Store.
type teamMap struct {
	teamsMu sync.Mutex
	teams   map[string]*team
}
