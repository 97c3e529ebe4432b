package swarm

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm/store"
)

// The mail primitives of a Driver. A run's mailbox (kept by stores that
// implement store.Mailboxes) holds mail posted to it; a strategy reads it
// with Mailbox, consumes it with Step.AckMail or JournalWith (in the same
// append as what it did with it) and waits for it with AwaitMail.

// Mailbox returns up to limit mails of the run's mailbox not consumed yet
// (all of them for limit 0), without consuming them. What is in the
// mailbox is not journaled: a strategy consumes the mails it acts on in
// the append that journals what it did (Step), and a replay takes that
// from the journal. A store without mailboxes is an error.
func (d *Driver) Mailbox(ctx context.Context, limit int) ([]store.Mail, error) {
	mb, ok := d.r.rt.store.(store.Mailboxes)
	if !ok {
		return nil, fmt.Errorf("%w: the store keeps no mailboxes", ErrInvalid)
	}
	mails, _, err := mb.Mailbox(ctx, d.r.id, limit)
	if err != nil {
		return nil, Interrupted(err)
	}
	return mails, nil
}

// AwaitMail pauses the run until mail arrives: it journals with (leaving
// out events the journal holds) and, once, a pause under key with reason
// AwaitingMail, marks the run paused, and returns an error wrapping
// [ErrAwaiting], which the strategy returns. No goroutine waits and the
// run holds no lease. A mail posted to the run (or a resume) makes it
// runnable: Drive runs again, and the strategy looks at its mailbox (a
// resume is journaled under key+"/resumed", see Recorded). Mail posted
// while the run was still working is found here and wakes it at once.
func (d *Driver) AwaitMail(ctx context.Context, key string, with ...Event) error {
	if err := checkKey(key); err != nil {
		return err
	}
	evs := append(with[:len(with):len(with)], Event{Type: EventPaused, Key: key, Reason: AwaitingMail})
	if err := d.Journal(ctx, Entry{Events: evs, Waiting: AwaitingMail}); err != nil {
		return err
	}
	// Mail posted while the run was still running did not wake it: look
	// again now that it is paused (a post from now on wakes it).
	r := d.r
	if mails, err := d.Mailbox(ctx, 1); err == nil && len(mails) > 0 {
		r.rt.nudge(context.WithoutCancel(ctx), r.id, r.seq.Load())
	}
	return ErrAwaiting
}
