package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// TeamRun is a handle on a running team: the lead's run and its
// teammates. It holds no state of its own; every method reads or writes
// the store, so handles in several processes see the same team.
type TeamRun struct {
	rt *swarm.Runtime
	id string
	td *teamDef
}

// Start begins a team run: its declared members are spawned and the lead
// works on task ("" to wait for the user's first message). Start returns
// once the lead has answered the task (or awaits the first message). With
// [swarm.WithID] it is idempotent: starting an existing team returns a handle on
// it.
func (t *Team) Start(ctx context.Context, rt *swarm.Runtime, task string, opts ...swarm.StartOption) (*TeamRun, error) {
	if err := registerTeam(rt, t); err != nil {
		return nil, err
	}
	input := json.RawMessage(`null`)
	if task != "" {
		input, _ = json.Marshal(task)
	}
	id, err := rt.Start(ctx, t.ID(), input, opts...)
	if err != nil {
		return nil, err
	}
	tr := &TeamRun{rt: rt, id: id, td: t.td}
	if _, err := rt.Settle(ctx, id); err != nil {
		return nil, err
	}
	return tr, nil
}

// registerTeam registers t with rt unless it is; another definition with
// t's id is an error.
func registerTeam(rt *swarm.Runtime, t *Team) error {
	for range 2 {
		switch d := definition(rt, t.ID()); d {
		case nil:
			if err := rt.Register(t); err != nil && !errors.Is(err, swarm.ErrDuplicate) {
				return err
			}
		case swarm.Definition(t):
			return nil
		default:
			return fmt.Errorf("%w: another definition is registered as %q", swarm.ErrDuplicate, t.ID())
		}
	}
	return fmt.Errorf("%w: team %s is not registered", swarm.ErrInvalidState, t.ID())
}

// definition returns the definition rt has registered as id, or nil.
func definition(rt *swarm.Runtime, id string) swarm.Definition {
	for _, d := range rt.Swarms() {
		if d.ID() == id {
			return d
		}
	}
	return nil
}

// findTeam returns the team registered as id.
func findTeam(rt *swarm.Runtime, id string) (*Team, bool) {
	t, ok := definition(rt, id).(*Team)
	return t, ok && t.td != nil
}

// Open returns a handle on team run id of rt (the lead's run; a
// teammate's run id names its team too). It fails with store.ErrNotFound
// for an unknown run and ErrNotTeam for a run that is not a team's.
func Open(ctx context.Context, rt *swarm.Runtime, id string) (*TeamRun, error) {
	run, err := rt.Store().Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("team %s: %w", id, err)
	}
	t, ok := findTeam(rt, run.Swarm)
	if !ok {
		if definition(rt, run.Swarm) == nil {
			return nil, fmt.Errorf("%w %q", swarm.ErrUnknownSwarm, run.Swarm)
		}
		return nil, fmt.Errorf("run %s (swarm %s): %w", id, run.Swarm, ErrNotTeam)
	}
	if run.Parent != "" {
		id = run.Parent // a teammate's run: its team is its parent
	}
	return &TeamRun{rt: rt, id: id, td: t.td}, nil
}

// ID returns the team run's id (the lead's run).
func (t *TeamRun) ID() string { return t.id }

// Lead returns the lead's member name.
func (t *TeamRun) Lead() string { return t.td.lead.Name }

// Status returns the lead's run status.
func (t *TeamRun) Status(ctx context.Context) (swarm.Status, error) { return t.rt.Status(ctx, t.id) }

// Events replays and follows the lead's events (see [Runtime.Events]).
func (t *TeamRun) Events(ctx context.Context, after int64, opts ...swarm.EventsOption) iter.Seq2[swarm.Event, error] {
	return t.rt.Events(ctx, t.id, after, opts...)
}

// Say sends a user message to the lead and returns its answer, like
// [Session.Say]: durable once sent, continued by another process if this
// one dies. Streamed text goes to WithStream's function; images and files
// go with the message to the lead's model with swarm.WithMessageParts.
func (t *TeamRun) Say(ctx context.Context, message string, opts ...swarm.SayOption) (string, error) {
	ev, st, err := t.rt.Say(ctx, t.id, message, opts...)
	switch {
	case err != nil:
		return "", err
	case ev == nil:
		return "", fmt.Errorf("team %s paused: %s: %w", t.id, st.Reason, swarm.ErrInvalidState)
	}
	return ev.Text, nil
}

// Roster returns the team's members (the lead first, then the teammates
// by name) with their roles, lifecycle states and unread mail.
func (t *TeamRun) Roster(ctx context.Context) ([]MemberStatus, error) {
	return roster(ctx, t.rt, t.td, t.id)
}

// Send posts a message from the user to member to. An unknown member is
// ErrNoMember; one that has ended ErrInvalidState; content over
// store.MaxMailBytes store.ErrTooLarge.
func (t *TeamRun) Send(ctx context.Context, to, content string, opts ...MailOption) (store.Mail, error) {
	m, err := userMail(MailMessage, content, opts)
	if err != nil {
		return store.Mail{}, err
	}
	return sendMail(ctx, t.rt, t.td, t.id, UserSender, []string{to}, m)
}

// Broadcast posts one message from the user to every member that has not
// ended, and returns their names.
func (t *TeamRun) Broadcast(ctx context.Context, content string, opts ...MailOption) ([]string, error) {
	m, err := userMail(MailBroadcast, content, opts)
	if err != nil {
		return nil, err
	}
	to, err := broadcastTo(ctx, t.rt, t.td, t.id, UserSender)
	if err != nil {
		return nil, err
	}
	if len(to) == 0 {
		return nil, fmt.Errorf("%w: team %s has no member to broadcast to", swarm.ErrInvalidState, t.id)
	}
	_, err = sendMail(ctx, t.rt, t.td, t.id, UserSender, to, m)
	return to, err
}

// MailOption configures a mail the user posts with [TeamRun.Send] or
// [TeamRun.Broadcast].
type MailOption func(*store.Mail)

// WithMailID names the mail, which makes retries safe: a post with the id
// of a mail its recipient already has delivers nothing again and returns
// that mail. The same id with other content is store.ErrExists. An id is at
// most 200 characters, without spaces or control characters. Without it,
// the mail gets a fresh id.
func WithMailID(id string) MailOption { return func(m *store.Mail) { m.ID = id } }

// WithMailParts attaches parts (images, files, audio, given with their
// bytes or a URL) to the mail: the recipient's next model call receives
// them with the mail. Large ones are stored once, as blobs the recipient
// refers to; an invalid part is swarm.ErrInvalidInput.
func WithMailParts(parts ...model.Part) MailOption {
	return func(m *store.Mail) { m.Parts = append(m.Parts, parts...) }
}

// userMail is a mail of type typ from the user, with opts applied (a
// mail without an id gets a fresh one when posted).
func userMail(typ, content string, opts []MailOption) (store.Mail, error) {
	m := store.Mail{Type: typ, Content: content}
	for _, o := range opts {
		o(&m)
	}
	return m, nil
}

// Inbox returns the mail in member's inbox that it has not consumed yet
// (without consuming it).
func (t *TeamRun) Inbox(ctx context.Context, member string) ([]store.Mail, error) {
	id, err := memberRunOf(ctx, t.rt, t.td, t.id, member)
	if err != nil {
		return nil, err
	}
	mb, _, err := teamStores(t.rt.Store())
	if err != nil {
		return nil, err
	}
	mails, _, err := mb.Mailbox(ctx, id, 0)
	return mails, err
}

// Tasks returns the team's task board.
func (t *TeamRun) Tasks(ctx context.Context) ([]store.Task, error) {
	_, tb, err := teamStores(t.rt.Store())
	if err != nil {
		return nil, err
	}
	return tb.Tasks(ctx, t.id)
}

// AddTask adds a task to the team's board (in an autonomous team, an idle
// teammate claims it).
func (t *TeamRun) AddTask(ctx context.Context, subject, description string, blockedBy ...int64) (store.Task, error) {
	return addTask(ctx, t.rt, t.td, t.id, store.Task{Subject: subject, Description: description, BlockedBy: blockedBy})
}

// Requests returns the team's protocol requests (shutdowns and plan
// approvals) with their states.
func (t *TeamRun) Requests(ctx context.Context) ([]store.Request, error) {
	_, tb, err := teamStores(t.rt.Store())
	if err != nil {
		return nil, err
	}
	return tb.Requests(ctx, t.id)
}

// Close ends the team: the lead's run and every teammate's are stopped.
func (t *TeamRun) Close(ctx context.Context) error { return t.rt.Stop(ctx, t.id, "team closed") }
