package swarm

import (
	"context"
	"errors"
	"fmt"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/store"
)

// The mail primitives of a Driver. A run's mailbox (kept by stores that
// implement store.Mailboxes) holds mail posted to it; a strategy reads it
// with Mailbox, consumes it with Step.AckMail or JournalWith (in the same
// append as what it did with it) and waits for it with AwaitMail.

// AwaitingMail is the reason of a run paused until mail arrives (see
// AwaitMail; an idle teammate): a post wakes such a run and no other (a
// run waiting for a user's message sees its mail at its next turn).
const AwaitingMail = store.AwaitingMail

// Mailbox implements strategy.Driver.Mailbox.
func (d *seamDriver) Mailbox(ctx context.Context, limit int) ([]store.Mail, error) {
	mb, ok := d.r.rt.store.(store.Mailboxes)
	if !ok {
		return nil, fmt.Errorf("%w: the store keeps no mailboxes", ErrInvalid)
	}
	mails, _, err := mb.Mailbox(ctx, d.r.id, limit)
	if err != nil {
		return nil, seam.Interrupt(err)
	}
	return mails, nil
}

// AwaitMail implements strategy.Driver.AwaitMail.
func (d *seamDriver) AwaitMail(ctx context.Context, key string, with ...Event) error {
	if err := d.takeStep(key, "AwaitMail", kindAwait); err != nil {
		return err
	}
	evs := append(with[:len(with):len(with)], Event{Type: EventPaused, Key: key, Reason: AwaitingMail})
	if err := d.Journal(ctx, evs, AwaitingMail, false); err != nil {
		return err
	}
	// Mail posted while the run was still running did not wake it; the
	// store then left it runnable instead of paused, in the same append
	// (see store.Mailboxes), so that no crash can lose the wake-up:
	// continue it (a post from now on wakes it as usual).
	r := d.r
	if run, err := r.rt.store.Get(ctx, r.id); err == nil && run.State == store.Running && run.Owner == "" {
		if err := r.rt.wake(context.WithoutCancel(ctx), r.id); err != nil {
			r.rt.log.Warn("continuing a run that went idle with mail unread", "run", r.id, "err", err)
		}
	}
	return seam.ErrAwaiting
}

// Post delivers m to the mailboxes of runs to (all or none, see
// store.Mailboxes) and continues those that waited for mail (see
// strategy.Driver.AwaitMail). An m without an ID gets a fresh one; a post with the ID of
// a mail a recipient already has delivers nothing again to it and returns
// the stored mail. It returns the mail as stored in each recipient's
// mailbox.
//
// m's parts are given with their bytes or a URL; each recipient refers
// to the blobs of the large ones, which are stored once, and its mailbox
// holds references. A tool forwards parts its run has
// (ConversationParts) by reference; a reference is refused outside a
// tool call, and for a blob the calling run does not refer to
// (ErrInvalidInput).
func (rt *Runtime) Post(ctx context.Context, to []string, m store.Mail) ([]store.Mail, error) {
	mb, ok := rt.store.(store.Mailboxes)
	if !ok {
		return nil, fmt.Errorf("%w: the store keeps no mailboxes", ErrInvalid)
	}
	if m.ID == "" {
		m.ID = newID()
	}
	if err := checkID("mail", m.ID); err != nil {
		return nil, err
	}
	if len(m.Parts) > 0 {
		parts, err := rt.mailParts(ctx, to, m.Parts)
		if err != nil {
			return nil, fmt.Errorf("post mail %s: %w", m.ID, err)
		}
		m.Parts = parts
	}
	got, err := mb.Post(ctx, to, m)
	if err != nil {
		return nil, err
	}
	// A recipient that waited for mail is runnable now.
	for _, id := range to {
		if err := rt.wake(ctx, id); err != nil && !errors.Is(err, store.ErrInvalidState) {
			rt.log.Warn("waking a run that waited for mail", "run", id, "err", err)
		}
	}
	return got, nil
}

// Runtime implements strategy.Driver.Runtime.
func (d *seamDriver) Runtime() *Runtime { return d.r.rt }
