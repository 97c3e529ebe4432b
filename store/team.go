package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// TaskStatus is where a task of a team's task board stands.
type TaskStatus string

// The task statuses.
const (
	TaskPending    TaskStatus = "pending"
	TaskInProgress TaskStatus = "in_progress"
	TaskCompleted  TaskStatus = "completed"
)

// Task is one entry of a team's task board (seed 002's s11): a unit of work
// that teammates claim, work on and complete. A task is blocked while any
// task of BlockedBy is not completed.
type Task struct {
	// ID is the task's number on its team's board (1-based, in order of
	// creation), assigned by the store.
	ID int64 `json:"id"`
	// Key makes AddTask idempotent: adding a task whose Key the board
	// already holds adds nothing and returns the stored task. Empty: no
	// deduplication.
	Key         string     `json:"key,omitempty"`
	Subject     string     `json:"subject"`
	Description string     `json:"description,omitempty"`
	Status      TaskStatus `json:"status"`
	// Owner is the member that claimed the task ("" if none), and
	// OwnerRun that member's run.
	Owner     string  `json:"owner,omitempty"`
	OwnerRun  string  `json:"owner_run,omitempty"`
	BlockedBy []int64 `json:"blocked_by,omitempty"`
	// Result is what the owner reported when it completed the task.
	Result    string    `json:"result,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RequestState is where a protocol request stands: pending, then exactly
// one of approved, rejected or expired, for good.
type RequestState string

// The request states.
const (
	RequestPending  RequestState = "pending"
	RequestApproved RequestState = "approved"
	RequestRejected RequestState = "rejected"
	RequestExpired  RequestState = "expired"
)

// Request is a protocol request between team members (seed 002's s10): a
// shutdown request from the lead, or a plan a teammate submits for the
// lead's approval. It is a state machine pending → approved | rejected |
// expired, kept in the store so that it survives restarts.
type Request struct {
	// ID identifies the request within its team (the request_id of the
	// mails that carry it). Adding an ID the team already has adds nothing.
	ID string `json:"id"`
	// Kind is the protocol ("shutdown" or "plan_approval"); the store does
	// not interpret it.
	Kind string `json:"kind"`
	// From and To are member names: who asks and who answers.
	From string `json:"from"`
	To   string `json:"to"`
	// Content is the request's text (the plan, or why shut down).
	Content string       `json:"content,omitempty"`
	State   RequestState `json:"state"`
	// Response is the answer's text (a rejection's reason or feedback).
	Response string `json:"response,omitempty"`
	// Deadline is when a pending request expires (zero: never), by the
	// store's clock (PostgreSQL: the database server's, which every node
	// shares).
	Deadline  time.Time `json:"deadline,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Teams is implemented by stores that keep teams' task boards and protocol
// requests. It is optional: teams need it; plain runs do not. A team is
// named by its lead's run id (the store does not require that run to
// exist); its boards and requests are independent of every other team's.
type Teams interface {
	// AddTask adds t to team's board as pending and unowned (its ID,
	// Status, Owner, OwnerRun, Result and times are set by the store;
	// BlockedBy is kept sorted, without repeats) and returns it as stored.
	// An empty team or Subject, a BlockedBy naming a task the board does
	// not have, or fields too large (see CheckTask: ErrTooLarge) give an
	// error and add nothing. A Key already on the board returns that task.
	AddTask(ctx context.Context, team string, t Task) (Task, error)

	// Tasks returns team's tasks in ID order (none for an unknown team).
	Tasks(ctx context.Context, team string) ([]Task, error)

	// ClaimTask makes member (whose run is ownerRun) the owner of task id
	// and sets it in progress, atomically: of any number of concurrent
	// claims, from any number of processes, exactly one wins. It succeeds
	// if the task is pending and unowned, already owned by ownerRun (a
	// repeated claim, which returns the task unchanged), or owned by a run
	// that has finished (Completed, Failed or Stopped, as the store's runs
	// say in the same transaction), whose claim on it is thereby released.
	// A task owned by another run (or by a run the store does not know)
	// gives ErrConflict (naming the owner); a completed or blocked task
	// ErrInvalidState (naming the blockers); an unknown task ErrNotFound.
	// An empty member or ownerRun is an error. See CheckClaim.
	ClaimTask(ctx context.Context, team string, id int64, member, ownerRun string) (Task, error)

	// CompleteTask marks task id completed with result, which only its
	// owner ownerRun may do (ErrConflict otherwise; a task nobody owns
	// gives ErrInvalidState; a result over MaxMailBytes ErrTooLarge).
	// Completing a completed task of the same owner again returns it
	// unchanged. Its dependents are unblocked once every task they are
	// blocked by is completed. See CheckComplete.
	CompleteTask(ctx context.Context, team string, id int64, ownerRun, result string) (Task, error)

	// ReleaseTasks puts every task in progress owned by ownerRun back to
	// pending and unowned, and returns how many it released.
	ReleaseTasks(ctx context.Context, team, ownerRun string) (int, error)

	// AddRequest records r as pending (its State, Response and times set
	// by the store; expired at once if its Deadline has passed) and
	// returns it as stored; an ID the team already has returns the stored
	// request. An empty team, ID, Kind, From or To, or fields too large
	// (see CheckRequest: ErrTooLarge), give an error and add nothing.
	AddRequest(ctx context.Context, team string, r Request) (Request, error)

	// Requests returns team's requests in order of creation. A pending
	// request whose deadline has passed is returned, and stored, as
	// expired.
	Requests(ctx context.Context, team string) ([]Request, error)

	// ResolveRequest moves request id from pending to state (approved or
	// rejected; any other state is an error) with response (at most
	// MaxMailBytes), atomically, and returns it: of concurrent resolutions
	// exactly one wins. A request that is no longer pending gives
	// ErrInvalidState, with the request as it is (so that resolving it
	// again the same way can be told apart by the caller); one past its
	// deadline becomes expired (stored so) and gives ErrInvalidState, with
	// the request; an unknown one ErrNotFound.
	ResolveRequest(ctx context.Context, team, id string, state RequestState, response string) (Request, error)
}

// maxBlockers bounds a task's BlockedBy.
const maxBlockers = 1000

// CheckTask reports an error if adding t to team's board is bad input,
// before anything is added: an empty team or Subject, a Subject,
// Description over MaxMailBytes or a team or Key over 1 KiB
// ([ErrTooLarge]), more than 1,000 BlockedBy or one that is not positive.
// Stores call it first in AddTask; that BlockedBy names tasks of the
// board is theirs to check.
func CheckTask(team string, t Task) error {
	if err := checkFields("add task to team", team, []field{
		{"team", team, maxMailHeaderBytes}, {"key", t.Key, maxMailHeaderBytes},
		{"subject", t.Subject, MaxMailBytes}, {"description", t.Description, MaxMailBytes},
	}); err != nil {
		return err
	}
	if team == "" {
		return fmt.Errorf("add task %q: empty team", t.Subject)
	}
	if t.Subject == "" {
		return fmt.Errorf("add task to team %q: empty subject", team)
	}
	if len(t.BlockedBy) > maxBlockers {
		return fmt.Errorf("add task %q to team %q: blocked by %d tasks, the limit is %d: %w", t.Subject, team, len(t.BlockedBy), maxBlockers, ErrTooLarge)
	}
	for _, id := range t.BlockedBy {
		if id < 1 {
			return fmt.Errorf("add task %q to team %q: blocked by task %d: %w", t.Subject, team, id, ErrNotFound)
		}
	}
	return nil
}

// Blockers returns ids sorted, without repeats: a task's BlockedBy as
// stores keep it.
func Blockers(ids []int64) []int64 {
	if len(ids) == 0 {
		return nil
	}
	out := append([]int64(nil), ids...)
	slices.Sort(out)
	return slices.Compact(out)
}

// UnknownBlockers is the error of an AddTask whose BlockedBy names tasks
// (missing) that team's board does not have.
func UnknownBlockers(team string, t Task, missing []int64) error {
	return fmt.Errorf("add task %q to team %q: blocked by %s, which the board does not have: %w", t.Subject, team, taskList(missing), ErrNotFound)
}

// CheckClaim decides a ClaimTask of task t (as stored) by member with run
// ownerRun, given whether t's owner run has finished (ownerDone) and
// which of t's blockers are not completed (open): nil if the claim may
// take the task, else the error ClaimTask returns (ErrInvalidState for a
// completed or blocked task, ErrConflict for one another live run owns).
// A claim that finds nothing to change (ownerRun owns t already) is
// allowed; the store returns t as it is.
func CheckClaim(team string, t Task, member, ownerRun string, ownerDone bool, open []int64) error {
	switch {
	case member == "" || ownerRun == "":
		return fmt.Errorf("claim task %d of team %q: empty member or run", t.ID, team)
	case t.Status == TaskCompleted:
		return fmt.Errorf("claim task %d of team %q: completed by %q: %w", t.ID, team, t.Owner, ErrInvalidState)
	case t.OwnerRun != "" && t.OwnerRun != ownerRun && !ownerDone:
		return fmt.Errorf("claim task %d of team %q: owned by %q (run %q): %w", t.ID, team, t.Owner, t.OwnerRun, ErrConflict)
	case len(open) > 0:
		return fmt.Errorf("claim task %d of team %q: blocked by %s, not completed: %w", t.ID, team, taskList(open), ErrInvalidState)
	}
	return nil
}

// CheckComplete decides a CompleteTask of task t (as stored) by ownerRun
// with result: done if t is completed by ownerRun already (the store
// returns it unchanged), an error if the completion is refused, else
// neither (the store completes t).
func CheckComplete(team string, t Task, ownerRun, result string) (done bool, err error) {
	switch {
	case len(result) > MaxMailBytes:
		return false, fmt.Errorf("complete task %d of team %q: result is %d bytes, the limit is %d: %w", t.ID, team, len(result), MaxMailBytes, ErrTooLarge)
	case ownerRun == "":
		return false, fmt.Errorf("complete task %d of team %q: empty run", t.ID, team)
	case t.OwnerRun == "":
		return false, fmt.Errorf("complete task %d of team %q: nobody owns it (status %s): %w", t.ID, team, t.Status, ErrInvalidState)
	case t.OwnerRun != ownerRun:
		return false, fmt.Errorf("complete task %d of team %q: owned by %q (run %q), not run %q: %w", t.ID, team, t.Owner, t.OwnerRun, ownerRun, ErrConflict)
	}
	return t.Status == TaskCompleted, nil
}

// taskList writes task IDs for messages: "task 3", "tasks 1, 2".
func taskList(ids []int64) string {
	if len(ids) == 1 {
		return fmt.Sprintf("task %d", ids[0])
	}
	s := "tasks "
	for i, id := range ids {
		if i > 0 {
			s += ", "
		}
		s += strconv.FormatInt(id, 10)
	}
	return s
}

// CheckRequest reports an error if adding r to team's requests is bad
// input, before anything is added: an empty team, ID, Kind, From or To,
// one of them over 1 KiB or Content over MaxMailBytes ([ErrTooLarge]).
// Stores call it first in AddRequest.
func CheckRequest(team string, r Request) error {
	fs := []field{
		{"team", team, maxMailHeaderBytes}, {"id", r.ID, maxMailHeaderBytes}, {"kind", r.Kind, maxMailHeaderBytes},
		{"from", r.From, maxMailHeaderBytes}, {"to", r.To, maxMailHeaderBytes}, {"content", r.Content, MaxMailBytes},
	}
	if err := checkFields("add request to team", team, fs); err != nil {
		return err
	}
	for _, f := range fs[:5] {
		if f.v == "" {
			return fmt.Errorf("add request %q to team %q: empty %s", r.ID, team, f.name)
		}
	}
	return nil
}

// CheckResolve reports an error if resolving a request to state with
// response is bad input: a state other than approved or rejected, or a
// response over MaxMailBytes ([ErrTooLarge]).
func CheckResolve(team, id string, state RequestState, response string) error {
	if state != RequestApproved && state != RequestRejected {
		return fmt.Errorf("resolve request %q of team %q: state %q is not %s or %s", id, team, state, RequestApproved, RequestRejected)
	}
	if len(response) > MaxMailBytes {
		return fmt.Errorf("resolve request %q of team %q: response is %d bytes, the limit is %d: %w", id, team, len(response), MaxMailBytes, ErrTooLarge)
	}
	return nil
}

// Expired reports whether r is pending with a deadline at or before now:
// stores then store it, and return it, as expired.
func (r Request) Expired(now time.Time) bool {
	return r.State == RequestPending && !r.Deadline.IsZero() && !now.Before(r.Deadline)
}

// NotPending is the error of a ResolveRequest of r, which is no longer
// pending (or has just expired).
func NotPending(team string, r Request) error {
	return fmt.Errorf("resolve request %q of team %q: it is %s: %w", r.ID, team, r.State, ErrInvalidState)
}

// NoTask is the error of an operation (op, as "claim") on task id that
// team's board does not have; it wraps ErrNotFound.
func NoTask(op, team string, id int64) error {
	return fmt.Errorf("%s task %d of team %q: no such task: %w", op, id, team, ErrNotFound)
}

// NoRequest is the error of a ResolveRequest of request id that team does
// not have; it wraps ErrNotFound.
func NoRequest(team, id string) error {
	return fmt.Errorf("resolve request %q of team %q: no such request: %w", id, team, ErrNotFound)
}

type field struct {
	name, v string
	limit   int
}

// checkFields reports ErrTooLarge for the first of fs over its limit.
func checkFields(op, team string, fs []field) error {
	for _, f := range fs {
		if len(f.v) > f.limit {
			if f.name == "team" {
				team = team[:32] + "..."
			}
			return fmt.Errorf("%s %q: %s is %d bytes, the limit is %d: %w", op, team, f.name, len(f.v), f.limit, ErrTooLarge)
		}
	}
	return nil
}
