// Package store defines where runs and their journals live.
//
// A run is a row (its id, swarm, state, owner and lease) plus an append-only
// journal of records. Everything the runtime knows about a run is derived from
// its journal; the row is a summary kept in the same transaction as each
// append so that listing and claiming stay cheap.
//
// Implementations register with [Register] and are opened by URL with [Open]
// ("memory:", "sqlite:PATH"). Every implementation must pass the conformance
// suite in package storetest.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/swarmrt/swarm/model"
)

// State is the lifecycle state of a run.
type State string

// The run states. Completed, Failed and Stopped are terminal.
const (
	Running   State = "running"
	Paused    State = "paused"
	Completed State = "completed"
	Failed    State = "failed"
	Stopped   State = "stopped"
)

// Terminal reports whether s is a final state.
func (s State) Terminal() bool { return s == Completed || s == Failed || s == Stopped }

// Valid reports whether s is one of the five states.
func (s State) Valid() bool {
	switch s {
	case Running, Paused, Completed, Failed, Stopped:
		return true
	}
	return false
}

// Errors returned by stores. Implementations wrap them with %w so that callers
// test with errors.Is.
var (
	// ErrNotFound: no run with that id.
	ErrNotFound = errors.New("run not found")
	// ErrExists: Create was given an id that is already taken.
	ErrExists = errors.New("run already exists")
	// ErrLeaseLost: the caller's lease is no longer current (another owner
	// claimed the run, or the run was released); the caller must stop
	// driving the run at once.
	ErrLeaseLost = errors.New("lease lost")
	// ErrLeased: Claim found the run held by another owner whose lease has
	// not expired.
	ErrLeased = errors.New("run is leased by another owner")
	// ErrConflict: an appended record's key is already in the journal.
	ErrConflict = errors.New("journal step already recorded")
	// ErrInvalidState: the operation is not allowed in the run's state
	// (resuming a run that is not paused, stopping a finished run, claiming
	// a paused or finished run).
	ErrInvalidState = errors.New("invalid state for this operation")
	// ErrPauseNotCurrent: a resume named a pause (Message.Pause) at which
	// the run no longer waits: it was answered already, the run has paused
	// again since, or it has finished. It wraps ErrInvalidState.
	ErrPauseNotCurrent = fmt.Errorf("the answered pause is not the run's current pause: %w", ErrInvalidState)
	// ErrWatchClosed: Watch was called on a closed store.
	ErrWatchClosed = errors.New("store closed: cannot watch")
	// ErrUnavailable: the store's database cannot be reached now (down,
	// restarting, refusing connections); trying again later may succeed.
	ErrUnavailable = errors.New("store unavailable")
)

// Run is the summary row of a run.
type Run struct {
	ID string `json:"id"`
	// Swarm is the id of the swarm definition the run executes.
	Swarm string `json:"swarm"`
	// Parent is the id of the parent run, empty for a top-level run.
	Parent string `json:"parent,omitempty"`
	State  State  `json:"state"`
	// Turn is the number of completed or started orchestrator rounds.
	Turn     int    `json:"turn"`
	MaxTurns int    `json:"max_turns"`
	Agent    string `json:"agent,omitempty"`
	// Result is the JSON output of a completed run.
	Result json.RawMessage `json:"result,omitempty"`
	// Reason explains a paused, failed or stopped run.
	Reason string      `json:"reason,omitempty"`
	Usage  model.Usage `json:"usage"`
	// Owner and Epoch identify the current lease; Owner is empty when no
	// process holds the run.
	Owner      string    `json:"owner,omitempty"`
	Epoch      int64     `json:"epoch"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// LastSeq is the sequence number of the newest journal record.
	LastSeq   int64     `json:"last_seq"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Blobs are the blobs a new run refers to from its first records
	// (see [Blobs]): a store that keeps blobs keeps them and records the
	// run's references to them in Create's transaction, so that no
	// record ever names a blob that is not kept, whenever the process
	// dies. Create and CreateReserving read it; Get and List leave it
	// empty; a store without blobs ignores it.
	Blobs []BlobRef `json:"-"`
}

// Record is one journal entry.
type Record struct {
	// Seq is assigned by the store: 1 for the first record of a run, then
	// contiguous. Callers leave it zero.
	Seq int64 `json:"seq"`
	// Key is the record's step key, unique within the run.
	Key string `json:"key"`
	// Type names the kind of record (see package swarm's event types).
	Type string `json:"type"`
	// Data is the record's JSON payload.
	Data json.RawMessage `json:"data,omitempty"`
	// Time is set by the caller.
	Time time.Time `json:"time"`
}

// Lease proves the right to append to a run. Epoch grows by one at every
// claim, so a lease from before the latest claim is rejected.
type Lease struct {
	RunID string
	Owner string
	Epoch int64
	// From is, when the claim took the run from another owner whose lease
	// had run out (a process that died or lost touch with the store), that
	// owner, and FromUntil when its lease ran out. Both are zero when the
	// run was unowned (new, released, resumed) or the claimer's already.
	// Stores set them in Claim and ClaimExpired; the runtime journals the
	// takeover (see package swarm's EventTakeover).
	From      string
	FromUntil time.Time
}

// Takeover is a claim that took a run over from an owner whose lease had
// run out (see Lease.From), as the runtime journals it: on the first record
// the new owner appends, so that a crash adds no record to a journal and
// moves no step.
type Takeover struct {
	// Node is the owner that took the run over, From the one it took it
	// from, Epoch the new lease's epoch.
	Node  string `json:"node"`
	From  string `json:"from"`
	Epoch int64  `json:"epoch"`
	// At is when Node claimed the run; LeaseUntil when From's lease ran
	// out; LastSeen when From was last known alive (its last record, or
	// its lease's last renewal if later). From LastSeen to At no process
	// drove the run: it is dead time, not time any step took.
	At         time.Time `json:"at"`
	LeaseUntil time.Time `json:"lease_until"`
	LastSeen   time.Time `json:"last_seen,omitzero"`
	// Redo holds the step keys From had in flight, which Node asked again
	// because their outcomes were lost: tool calls announced without a
	// result, and the model call of the record that carries the takeover
	// when no tool call was in flight.
	Redo []string `json:"redo,omitempty"`
}

// Update changes the run row atomically with an append. Zero fields leave the
// row as it is; ClearReason is the way to empty the reason.
type Update struct {
	State    State
	Turn     int
	MaxTurns int
	Agent    string
	Result   json.RawMessage
	Reason   string
	// ClearReason empties the run's reason when Reason is empty (a
	// non-empty Reason replaces it regardless): the runtime sets it when a
	// run leaves the paused state without a reason of its own, so that a
	// resumed or completed run does not show the pause's reason.
	ClearReason bool
	// Usage, when non-nil, replaces the run's usage.
	Usage *model.Usage
	// Release clears the owner: the run is paused, finished, or handed back.
	// Setting a terminal State or Paused always releases.
	Release bool
	// AckInbox deletes inbox messages with ID <= AckInbox.
	AckInbox int64
	// AckMail advances the run's mailbox cursor to AckMail (see
	// [Mailboxes]), in the same transaction as the records: the mails up
	// to it are consumed by the turn those records journal. A cursor never
	// moves back; a store without mailboxes ignores it.
	AckMail int64
}

// NewReason returns the reason u gives the run and whether u changes it:
// u.Reason if set, "" if u.ClearReason, else no change.
func (u Update) NewReason() (string, bool) {
	return u.Reason, u.Reason != "" || u.ClearReason
}

// Pool is the budget pool of a run tree, kept on its root run's row: what
// the runs of the tree have taken, together, from their shared budget. A new
// run's pool is zero.
type Pool struct {
	// Calls counts model calls reserved, each before it starts.
	Calls int64 `json:"calls,omitempty"`
	// Tools counts tool calls reserved, each before it runs.
	Tools int64 `json:"tools,omitempty"`
	// Tokens (input plus output) and Cost (US dollars) add up the usage
	// of the calls that returned.
	Tokens int64   `json:"tokens,omitempty"`
	Cost   float64 `json:"cost,omitempty"`
	// Lifted: a human lifted the budget; its limits no longer apply.
	Lifted bool `json:"lifted,omitempty"`
}

// CheckSpend reports an error if d adds a negative or non-finite amount of
// tokens or cost; stores call it before Spend changes anything. Negative
// Calls and Tools are allowed: they give back reserved calls (see Spend).
func CheckSpend(runID string, d Pool) error {
	if d.Tokens < 0 || d.Cost < 0 || math.IsNaN(d.Cost) || math.IsInf(d.Cost, 0) {
		return fmt.Errorf("spend on run %q: tokens and cost must be finite and not negative (tokens %d, cost %v)", runID, d.Tokens, d.Cost)
	}
	return nil
}

// MessageKind is the kind of an inbox message.
type MessageKind string

// Inbox message kinds.
const (
	MsgResume MessageKind = "resume"
	MsgStop   MessageKind = "stop"
)

// Message is an inbox message: an external command for a run, delivered to
// whoever drives it next.
type Message struct {
	ID   int64       `json:"id"`
	Kind MessageKind `json:"kind"`
	Text string      `json:"text,omitempty"`
	Time time.Time   `json:"time"`
	// Pause, when not zero in a resume, names the pause it answers: the
	// sequence number of the run's paused event, which is the last record
	// of a paused run's journal. Send refuses the resume with
	// ErrPauseNotCurrent unless the run is paused with LastSeq == Pause,
	// in the same transaction as the delivery. It is not stored.
	Pause int64 `json:"pause,omitempty"`
	// Parts are the images, files and audio a resume carries with its
	// text (a user's message to a conversation): large ones by reference
	// to blobs the run refers to (see Blobs), so that an inbox holds no
	// bytes of them. The runtime puts them (Runtime.Say); a store keeps
	// them as given, after CheckMessage.
	Parts []model.Part `json:"parts,omitempty"`
}

// PauseNotCurrent reports whether a resume m to a run in state state with
// last sequence number lastSeq names a pause other than the run's current
// one; stores call it in Send.
func PauseNotCurrent(m Message, state State, lastSeq int64) bool {
	return m.Kind == MsgResume && m.Pause != 0 && (state != Paused || lastSeq != m.Pause)
}

// Filter selects runs for List. Zero fields match everything.
type Filter struct {
	Swarm  string
	State  State
	Parent string
	// TopLevel selects runs without a parent (it is ignored when Parent is
	// set).
	TopLevel bool
	// IDPrefix selects runs whose id starts with it.
	IDPrefix string
	// Since and Until bound the creation time: a run matches when
	// Since <= CreatedAt < Until (a zero time leaves that side open).
	Since, Until time.Time
	// Before selects the runs created before the run with this id: pass
	// the last run of a page to get the next page (keyset pagination,
	// which costs the same at any depth, unlike Offset, and is not shifted
	// by runs created meanwhile). An unknown id matches no run.
	Before string
	// Limit caps the number of runs returned (0: no cap); Offset skips the
	// newest Offset matches. Runs are ordered newest first.
	Limit  int
	Offset int
}

// Renewal is the outcome of a heartbeat.
type Renewal struct {
	// Held lists the runs still leased to the owner, now renewed.
	Held []string
	// Pending lists the held runs that have unread inbox messages.
	Pending []string
}

// Store persists runs and journals. All methods are safe for concurrent use.
type Store interface {
	// Create inserts run r in state Running, leased to owner for the given
	// duration at epoch 1, and appends records, all in one transaction.
	// r.ID must be new (ErrExists otherwise). State, Owner, Epoch,
	// LeaseUntil, LastSeq and the timestamps of r are set by the store; a
	// store that keeps blobs keeps r.Blobs in the same transaction (an
	// unknown blob reference gives ErrNoBlob and creates nothing).
	Create(ctx context.Context, r Run, owner string, lease time.Duration, records []Record) (Lease, error)

	// Get returns the run's row, or ErrNotFound.
	Get(ctx context.Context, id string) (Run, error)

	// List returns runs matching f, newest first.
	List(ctx context.Context, f Filter) ([]Run, error)

	// Read returns up to limit records with Seq > after, in order (limit <= 0
	// means all). An unknown run yields ErrNotFound.
	Read(ctx context.Context, id string, after int64, limit int) ([]Record, error)

	// Append adds records to the journal and applies u to the row in one
	// transaction, and returns the new last sequence number. It fails with
	// ErrLeaseLost unless l is the run's current lease (same owner and
	// epoch), and with ErrConflict if any record's key is already in the
	// journal (or repeated within records); on failure nothing is written.
	Append(ctx context.Context, l Lease, records []Record, u Update) (int64, error)

	// Claim leases run id to owner: epoch+1, lease until now+lease. It
	// succeeds if the run is Running and unowned, its lease has expired, or
	// it is already owned by owner. A run held by another live owner gives
	// ErrLeased; a paused or finished run ErrInvalidState.
	Claim(ctx context.Context, id, owner string, lease time.Duration) (Lease, error)

	// ClaimExpired claims up to limit Running runs that have no owner or an
	// expired lease, and returns their leases oldest run first. When more
	// are claimable, the ones waiting longest are taken: those without an
	// owner first, then by lease expiry, ties oldest run first. (That is the
	// order of an index by lease expiry, so that a store's poll when nothing
	// is claimable reads no run that is not.)
	ClaimExpired(ctx context.Context, owner string, lease time.Duration, limit int) ([]Lease, error)

	// Renew extends, to now+lease, every Running run leased to owner, and
	// reports which runs it holds and which of them have inbox messages.
	Renew(ctx context.Context, owner string, lease time.Duration) (Renewal, error)

	// Release gives up lease l if it is still current; the run stays in its
	// state, unowned, so that another process may claim it at once.
	Release(ctx context.Context, l Lease) error

	// Send delivers an inbox message. A resume requires a Paused run (and,
	// when it names one, the pause of Message.Pause: ErrPauseNotCurrent
	// otherwise); a stop
	// requires a run that is not finished; otherwise ErrInvalidState. Both
	// make a paused run Running and unowned (runnable) in the same
	// transaction, so the message is never lost between a pause and a claim.
	Send(ctx context.Context, id string, m Message) (Message, error)

	// Inbox returns the run's unacknowledged messages, oldest first.
	Inbox(ctx context.Context, id string) ([]Message, error)

	// Spend adds d.Calls, d.Tools, d.Tokens and d.Cost to the budget pool
	// kept on run id's row, and lifts the pool if d.Lifted, in one atomic
	// step, and returns the pool as it is after the change. A zero d only
	// reads it. Negative Calls or Tools give back calls reserved and not
	// made; neither total goes below zero. Spends are serialized per run
	// across every process sharing the store, so no addition is lost, and
	// n concurrent Spends of one call each return n distinct Calls totals:
	// that is what lets a run tree reserve model calls from one pool
	// without exceeding it. A lift is never undone. Spend needs no lease
	// and works in every state; an unknown run gives ErrNotFound, a
	// negative or non-finite amount of tokens or cost an error (see
	// CheckSpend), and either way nothing changes.
	Spend(ctx context.Context, id string, d Pool) (Pool, error)

	// Close releases the store's resources.
	Close() error
}

// Reserver is implemented by stores that can take a new run tree's first
// reservation from its budget pool in the transaction that creates its
// root run, so that the run needs no Spend before its first model call.
// It is optional: the runtime calls Create and then Spend on stores
// without it.
type Reserver interface {
	// CreateReserving is Create that also applies d to the new run's
	// budget pool, as Spend(ctx, r.ID, d) right after would, in the same
	// transaction, and returns the pool. A run that exists already
	// (ErrExists), or a d that Spend refuses (see CheckSpend), changes
	// nothing.
	CreateReserving(ctx context.Context, r Run, owner string, lease time.Duration, records []Record, d Pool) (Lease, Pool, error)
}

// CheckKeys reports ErrConflict if records repeat a step key; stores call it
// before appending a batch.
func CheckKeys(runID string, records []Record) error {
	if len(records) < 2 {
		return nil
	}
	if len(records) <= 8 {
		for i := 1; i < len(records); i++ {
			for j := range i {
				if records[i].Key == records[j].Key {
					return fmt.Errorf("run %q: key %q repeated in batch: %w", runID, records[i].Key, ErrConflict)
				}
			}
		}
		return nil
	}
	seen := make(map[string]struct{}, len(records))
	for _, rec := range records {
		if _, dup := seen[rec.Key]; dup {
			return fmt.Errorf("run %q: key %q repeated in batch: %w", runID, rec.Key, ErrConflict)
		}
		seen[rec.Key] = struct{}{}
	}
	return nil
}

// Mail is a message in a run's mailbox: teammates (seed 002) talk through
// mailboxes. A mailbox is an append-only log per recipient run with a
// sequence number per mail and an ack cursor, kept in the store.
type Mail struct {
	// Seq is the mail's position in the recipient's mailbox (1-based),
	// assigned by the store.
	Seq int64 `json:"seq"`
	// ID identifies the mail; it is unique per recipient. Posting an ID
	// that the recipient's mailbox already holds adds nothing (a retried
	// post is not delivered twice). A broadcast is one ID posted to many.
	ID string `json:"id"`
	// From is the sender (a member name, or "" for the user).
	From string `json:"from,omitempty"`
	// Type is the kind of message (message, broadcast, shutdown_request,
	// ...); the store does not interpret it.
	Type string `json:"type"`
	// RequestID and ReplyTo tie protocol requests and responses together.
	RequestID string `json:"request_id,omitempty"`
	ReplyTo   string `json:"reply_to,omitempty"`
	// Content is the message text (at most MaxMailBytes bytes).
	Content string `json:"content"`
	// Parts are the mail's attachments (images, files, audio): large ones
	// by reference to blobs (see Blobs) that each recipient refers to, so
	// a mailbox holds no bytes of them. The runtime puts them
	// (Runtime.Post); a store keeps them as given.
	Parts []model.Part `json:"parts,omitempty"`
	// Time is when the mail was posted, set by the store.
	Time time.Time `json:"time"`
}

// MaxMailBytes bounds a mail's Content.
const MaxMailBytes = 64 << 10

// ErrTooLarge: a mail's content exceeds MaxMailBytes.
var ErrTooLarge = errors.New("too large")

// AwaitingMail is the Reason of a run paused until mail arrives (an idle
// teammate): [Mailboxes.Post] wakes such a run, and only such a run.
const AwaitingMail = "idle: awaiting mail"

// WaitsForMail reports whether a run in state state with reason reason is
// one that [Mailboxes.Post] wakes: Paused with Reason AwaitingMail.
func WaitsForMail(state State, reason string) bool {
	return state == Paused && reason == AwaitingMail
}

// Mailboxes is implemented by stores that keep mailboxes. It is optional:
// teams need it; plain runs do not.
type Mailboxes interface {
	// Post appends m to the mailbox of each run of to, in one transaction:
	// all or nothing. An unknown run gives ErrNotFound, a finished one
	// ErrInvalidState, content over MaxMailBytes ErrTooLarge (wrapped,
	// naming the run), and then nothing is posted. A recipient that waits
	// for mail (see [WaitsForMail]: Paused with Reason AwaitingMail)
	// becomes Running and unowned (runnable) in the same transaction, like
	// a Send, so a mail is never lost between a teammate going idle and
	// waking up. Any other recipient is left as it is (a run paused for
	// something else, such as a user's message or a human's answer, keeps
	// its state, reason and owner; it reads the mail when it runs next).
	// Watchers see ChangeInbox and, for a woken run, ChangeRunnable.
	// Conversely, an Append that pauses a run for mail (an Update with
	// State Paused and Reason AwaitingMail) while its mailbox holds mail
	// it has not acknowledged (posted while it worked, which did not wake
	// it) leaves it Running and unowned instead, in the same transaction,
	// and watchers see ChangeRunnable: a mail is never left unread by a
	// run nobody will wake, even when its process dies after the append.
	// Post returns, per recipient, the
	// mail as stored (with its Seq and Time; an ID already in that
	// mailbox returns the stored one). Posts to one mailbox are totally
	// ordered, and one sender's posts keep their order.
	Post(ctx context.Context, to []string, m Mail) ([]Mail, error)

	// Mailbox returns up to limit (<= 0: all) mails of run id after its ack
	// cursor, oldest first, and the cursor. An unknown run gives
	// ErrNotFound.
	Mailbox(ctx context.Context, id string, limit int) (mails []Mail, cursor int64, err error)
}

// ChangeKind names what changed in a run, for a [Watcher].
type ChangeKind string

// The kinds of change a Watcher reports.
const (
	// ChangeAppended: records were appended to the run's journal or its row
	// changed (by Create or Append).
	ChangeAppended ChangeKind = "appended"
	// ChangeInbox: a message was sent to the run (Send), or a mail posted
	// to it (Post).
	ChangeInbox ChangeKind = "inbox"
	// ChangeRunnable: the run became Running and unowned, so any process
	// may claim it now (a Release, an Append with Update.Release, a Send
	// to a paused run, a Post to a run that waits for mail, a Create
	// without an owner). An expired lease is
	// not reported: claimers also poll.
	ChangeRunnable ChangeKind = "runnable"
)

// Change is one committed change of a run, as reported by a [Watcher].
type Change struct {
	RunID string
	Kind  ChangeKind
}

// Watcher is implemented by stores that can tell their users, in this and
// other processes, about committed changes as they happen. It is optional:
// without it, users find changes by polling.
//
// Notifications are prompt but not guaranteed (a store may lose some while
// its connection to a database is re-established), may be repeated, and are
// only sent after the change is committed. Users must still poll, less
// often.
type Watcher interface {
	// Watch calls fn for every change committed after Watch returns,
	// until ctx ends or the store is closed. fn is called from one
	// goroutine at a time per Watch and must not block: it should hand
	// slow work to another goroutine. Watch fails if the store cannot
	// subscribe (a closed store, an unreachable database).
	Watch(ctx context.Context, fn func(Change)) error
}

// EncodeParts encodes the parts of a mail or an inbox message as a store
// keeps them in a column: JSON, "" for none.
func EncodeParts(parts []model.Part) (string, error) {
	if len(parts) == 0 {
		return "", nil
	}
	data, err := json.Marshal(parts)
	if err != nil {
		return "", fmt.Errorf("encode parts: %w", err)
	}
	return string(data), nil
}

// DecodeParts decodes what EncodeParts returned.
func DecodeParts(s string) ([]model.Part, error) {
	if s == "" {
		return nil, nil
	}
	var parts []model.Part
	if err := json.Unmarshal([]byte(s), &parts); err != nil {
		return nil, fmt.Errorf("decode parts: %w", err)
	}
	return parts, nil
}
