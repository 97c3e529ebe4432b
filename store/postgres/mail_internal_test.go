package postgres

import (
	"slices"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

// stage stages mail id for run to as a post's first step does, at time
// at (Unix ns), and leaves it there, as a poster between its two steps.
func stage(t *testing.T, s *Store, to, id string, at int64) {
	t.Helper()
	if _, err := s.pool.Exec(t.Context(), `INSERT INTO swarm_mail_staged (rid, id, sender, type, time)
		SELECT rid, $2, 'x', 'message', $3 FROM swarm_runs WHERE id = $1`, to, id, at); err != nil {
		t.Fatal(err)
	}
}

func mailIDs(ms []store.Mail) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// TestPostNumbersStaged: a post numbers every mail staged for its mailbox
// before its own, in staging order, once each (a mail staged twice, or
// whose ID the mailbox has, once), in its one transaction.
func TestPostNumbersStaged(t *testing.T) {
	s := openT(t)
	ctx := t.Context()
	if _, err := s.Create(ctx, store.Run{ID: "r", Swarm: "sw"}, "n", time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Post(ctx, []string{"r"}, store.Mail{ID: "m0", Type: "message"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	for _, id := range []string{"m1", "m2", "m1", "m0"} {
		stage(t, s, "r", id, now)
	}
	// Staged mails are not in the mailbox yet (nor numbered by a read
	// while their posters may still be at work).
	if ms, _, err := s.Mailbox(ctx, "r", 0); err != nil || !slices.Equal(mailIDs(ms), []string{"m0"}) {
		t.Fatalf("Mailbox with mails staged = %q, %v", mailIDs(ms), err)
	}
	out, err := s.Post(ctx, []string{"r"}, store.Mail{ID: "m3", Type: "message"})
	if err != nil || out[0].Seq != 4 {
		t.Fatalf("Post after three staged mails = %+v, %v; want Seq 4", out, err)
	}
	ms, _, err := s.Mailbox(ctx, "r", 0)
	if err != nil || !slices.Equal(mailIDs(ms), []string{"m0", "m1", "m2", "m3"}) {
		t.Fatalf("Mailbox = %q, %v", mailIDs(ms), err)
	}
	for i, m := range ms {
		if m.Seq != int64(i+1) {
			t.Fatalf("mail %s has Seq %d, want %d", m.ID, m.Seq, i+1)
		}
	}
	var left int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM swarm_mail_staged`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d mails left staged, %v", left, err)
	}
}

// TestMailboxNumbersStale: a mail whose poster died between staging and
// numbering is numbered by a read of its mailbox once it is old enough,
// and wakes its recipient if it waits for mail.
func TestMailboxNumbersStale(t *testing.T) {
	s := openT(t)
	ctx := t.Context()
	l, err := s.Create(ctx, store.Run{ID: "r", Swarm: "sw"}, "n", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, l, nil, store.Update{State: store.Paused, Reason: store.AwaitingMail}); err != nil {
		t.Fatal(err)
	}
	stage(t, s, "r", "m1", time.Now().Add(-2*staleStaged).UnixNano())
	ms, _, err := s.Mailbox(ctx, "r", 0)
	if err != nil || !slices.Equal(mailIDs(ms), []string{"m1"}) || ms[0].Seq != 1 {
		t.Fatalf("Mailbox with a stale staged mail = %+v, %v", ms, err)
	}
	if r, err := s.Get(ctx, "r"); err != nil || r.State != store.Running || r.Owner != "" {
		t.Fatalf("recipient after its mail was numbered: %+v, %v; want running, unowned", r, err)
	}
}
