package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/store/storetest"
)

// handles opens n Stores on one new file, as n processes would.
func handles(t testing.TB, n int) []store.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.db")
	out := make([]store.Store, n)
	for i := range out {
		s := open(t, path)
		t.Cleanup(func() { s.Close() })
		out[i] = s
	}
	return out
}

// TestMailFourHandles: four Stores on one file (four processes, in real
// life) post 2,500 mails each to one run while a fifth drains it: every
// mail is consumed exactly once, each sender's in order.
func TestMailFourHandles(t *testing.T) {
	hs := handles(t, 5)
	storetest.MailConcurrency(t, hs[4], hs[:4], storetest.MailPerSender())
}

// TestWatchSeesOtherProcessMail: a mail posted through another Store on
// the same file is reported to this Store's watchers, as ChangeInbox, and
// also ChangeRunnable when it woke a run that waits for mail (and only
// then).
func TestWatchSeesOtherProcessMail(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	hs := handles(t, 2)
	owner, other := hs[0].(*sqlite.Store), hs[1].(*sqlite.Store)
	if _, err := owner.Create(ctx, store.Run{ID: "busy"}, "owner", time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	pl, err := owner.Create(ctx, store.Run{ID: "idle"}, "owner", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Append(ctx, pl, nil, store.Update{State: store.Paused, Reason: store.AwaitingMail}); err != nil {
		t.Fatal(err)
	}
	al, err := owner.Create(ctx, store.Run{ID: "asking"}, "owner", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Append(ctx, al, nil, store.Update{State: store.Paused, Reason: "awaiting user message"}); err != nil {
		t.Fatal(err)
	}
	changes := make(chan store.Change, 100)
	if err := owner.Watch(ctx, func(c store.Change) { changes <- c }); err != nil {
		t.Fatal(err)
	}
	next := func() store.Change {
		t.Helper()
		select {
		case c := <-changes:
			return c
		case <-ctx.Done():
			t.Fatal("no notification of a mail posted by the other store")
		}
		return store.Change{}
	}
	if _, err := other.Post(ctx, []string{"busy"}, store.Mail{ID: "m1"}); err != nil {
		t.Fatal(err)
	}
	if c := next(); c != (store.Change{RunID: "busy", Kind: store.ChangeInbox}) {
		t.Fatalf("mail to a running run: %+v", c)
	}
	if _, err := other.Post(ctx, []string{"idle"}, store.Mail{ID: "m2"}); err != nil {
		t.Fatal(err)
	}
	if c := next(); c != (store.Change{RunID: "idle", Kind: store.ChangeInbox}) {
		t.Fatalf("mail to a paused run: %+v", c)
	}
	if c := next(); c != (store.Change{RunID: "idle", Kind: store.ChangeRunnable}) {
		t.Fatalf("mail to a paused run: %+v, want it runnable", c)
	}
	// A run paused for the user is told of the mail, and stays paused.
	for _, id := range []string{"asking", "busy"} {
		if _, err := other.Post(ctx, []string{id}, store.Mail{ID: "m3"}); err != nil {
			t.Fatal(err)
		}
		if c := next(); c != (store.Change{RunID: id, Kind: store.ChangeInbox}) {
			t.Fatalf("mail to %s: %+v, want only its inbox", id, c)
		}
	}
}

// BenchmarkMailLatency: post one mail, see it (and hear of it) through the
// same Store, one process.
func BenchmarkMailLatency(b *testing.B) {
	s := handles(b, 1)[0]
	storetest.BenchmarkMailLatency(b, s, s)
}

// BenchmarkMailLatencyTwoHandles: post through one Store, see it through
// another on the same file, whose watcher polls (sqlite.DefaultInboxPoll).
func BenchmarkMailLatencyTwoHandles(b *testing.B) {
	hs := handles(b, 2)
	storetest.BenchmarkMailLatency(b, hs[0], hs[1])
}

// BenchmarkMailThroughput: four Stores on one file post into one mailbox
// that a fifth drains.
func BenchmarkMailThroughput(b *testing.B) {
	hs := handles(b, 5)
	storetest.BenchmarkMailThroughput(b, hs[4], hs[:4])
}
