package strategy

import (
	"context"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/store"
)

// The mail primitives of a Driver. A run's mailbox (kept by stores that
// implement store.Mailboxes) holds mail posted to it (swarm.Runtime.Post);
// a strategy reads it with Mailbox, consumes it with Step.AckMail or
// JournalWith (in the same append as what it did with it) and waits for it
// with AwaitMail.

// Mailbox returns up to limit mails of the run's mailbox not consumed yet
// (all of them for limit 0), without consuming them. What is in the
// mailbox is not journaled: a strategy consumes the mails it acts on in
// the append that journals what it did (Step), and a replay takes that
// from the journal. A store without mailboxes is an error.
func (d *Driver) Mailbox(ctx context.Context, limit int) ([]store.Mail, error) {
	return d.e.Mailbox(ctx, limit)
}

// AwaitMail pauses the run until mail arrives: it journals with (leaving
// out events the journal holds) and, once, a pause under key with reason
// swarm.AwaitingMail, marks the run paused, and returns an error wrapping
// [ErrAwaiting], which the strategy returns. No goroutine waits and the
// run holds no lease. A mail posted to the run (or a resume) makes it
// runnable: Drive runs again, and the strategy looks at its mailbox (a
// resume is journaled under key+"/resumed", see RecordedEvent). Mail
// posted while the run was still working is found here and wakes it at
// once.
func (d *Driver) AwaitMail(ctx context.Context, key string, with ...swarm.Event) error {
	return d.e.AwaitMail(ctx, key, with...)
}

// JournalWith adds evs to be journaled together with the result of the
// tool call executing in ctx, in the same append (each key is the call's
// step key followed by "/" and the event's type), and, with ackMail above
// zero, acknowledges the run's mailbox up to that mail: a tool with an
// effect outside the journal (a mail sent, a task claimed) records what it
// did with its result, so that the two are journaled or lost together.
// Outside a tool call it does nothing.
func JournalWith(ctx context.Context, ackMail int64, evs ...swarm.Event) {
	if c, ok := ctx.Value(seam.CallKey{}).(seam.Call); ok {
		c.JournalWith(ackMail, evs)
	}
}
