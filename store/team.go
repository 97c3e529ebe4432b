package store

import (
	"context"
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
	// Deadline is when a pending request expires (zero: never).
	Deadline  time.Time `json:"deadline,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Teams is implemented by stores that keep teams' task boards and protocol
// requests. It is optional: teams need it; plain runs do not. A team is
// named by its lead's run id; its boards and requests are independent of
// every other team's.
type Teams interface {
	// AddTask adds t to team's board as pending and unowned (its ID,
	// Status, Owner, OwnerRun, Result and times are set by the store) and
	// returns it as stored. An empty Subject, a BlockedBy naming a task the
	// board does not have, or fields over MaxMailBytes give an error and
	// add nothing. A Key already on the board returns that task.
	AddTask(ctx context.Context, team string, t Task) (Task, error)

	// Tasks returns team's tasks in ID order (none for an unknown team).
	Tasks(ctx context.Context, team string) ([]Task, error)

	// ClaimTask makes member (whose run is ownerRun) the owner of task id
	// and sets it in progress, atomically: of any number of concurrent
	// claims exactly one wins. It succeeds if the task is pending and
	// unowned, already owned by ownerRun (a repeated claim), or owned by a
	// run that has finished (Completed, Failed or Stopped), whose claims
	// are thereby released. A task owned by another run gives ErrConflict
	// (naming the owner); a completed or blocked task ErrInvalidState
	// (naming the blockers); an unknown task ErrNotFound.
	ClaimTask(ctx context.Context, team string, id int64, member, ownerRun string) (Task, error)

	// CompleteTask marks task id completed with result, which only its
	// owner ownerRun may do (ErrConflict otherwise; a task nobody owns
	// gives ErrInvalidState). Completing a completed task of the same
	// owner again returns it unchanged. Its dependents are unblocked once
	// every task they are blocked by is completed.
	CompleteTask(ctx context.Context, team string, id int64, ownerRun, result string) (Task, error)

	// ReleaseTasks puts every task in progress owned by ownerRun back to
	// pending and unowned, and returns how many it released.
	ReleaseTasks(ctx context.Context, team, ownerRun string) (int, error)

	// AddRequest records r as pending (its State, Response and times set
	// by the store) and returns it as stored; an ID the team already has
	// returns the stored request. An empty ID, Kind, From or To, or
	// fields over MaxMailBytes, give an error and add nothing.
	AddRequest(ctx context.Context, team string, r Request) (Request, error)

	// Requests returns team's requests in order of creation. A pending
	// request whose deadline has passed is returned, and stored, as
	// expired.
	Requests(ctx context.Context, team string) ([]Request, error)

	// ResolveRequest moves request id from pending to state (approved or
	// rejected) with response, atomically, and returns it. A request that
	// is no longer pending gives ErrInvalidState, with the request as it
	// is (so that resolving it again the same way can be told apart by
	// the caller); one past its deadline becomes expired and gives
	// ErrInvalidState; an unknown one ErrNotFound.
	ResolveRequest(ctx context.Context, team, id string, state RequestState, response string) (Request, error)
}
