package storetest

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// mailTests are the cases of store.Mailboxes; a store without mailboxes
// skips them.
var mailTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"MailRoundTrip", testMailRoundTrip},
	{"MailAckRejectedAppend", testMailAckRejectedAppend},
	{"MailAckNeverBack", testMailAckNeverBack},
	{"MailDuplicateID", testMailDuplicateID},
	{"MailAllOrNothing", testMailAllOrNothing},
	{"MailFinished", testMailFinished},
	{"MailTooLarge", testMailTooLarge},
	{"MailBadInput", testMailBadInput},
	{"MailWakesPaused", testMailWakesPaused},
	{"MailBeforeIdle", testMailBeforeIdle},
	{"MailLeavesOtherPauses", testMailLeavesOtherPauses},
	{"MailBroadcast", testMailBroadcast},
	{"MailConcurrent", testMailConcurrent},
	{"MailParts", testMailParts},
}

// mailboxes returns s as store.Mailboxes, skipping t if it is not one.
func mailboxes(t testing.TB, s store.Store) store.Mailboxes {
	t.Helper()
	mb, ok := s.(store.Mailboxes)
	if !ok {
		t.Skipf("%T does not implement store.Mailboxes: mailbox cases skipped", s)
	}
	return mb
}

func post(t *testing.T, mb store.Mailboxes, to []string, m store.Mail) []store.Mail {
	t.Helper()
	out, err := mb.Post(t.Context(), to, m)
	if err != nil {
		t.Fatalf("Post(%v, %q): %v", to, m.ID, err)
	}
	if len(out) != len(to) {
		t.Fatalf("Post(%v, %q) returned %d mails", to, m.ID, len(out))
	}
	return out
}

// mailbox returns id's unacknowledged mails (all of them) and its cursor.
func mailbox(t *testing.T, mb store.Mailboxes, id string) ([]store.Mail, int64) {
	t.Helper()
	ms, cur, err := mb.Mailbox(t.Context(), id, 0)
	if err != nil {
		t.Fatalf("Mailbox(%q): %v", id, err)
	}
	return ms, cur
}

// wantMailbox checks that id's mailbox holds, after cursor, the mails with
// exactly the given IDs, in order.
func wantMailbox(t *testing.T, mb store.Mailboxes, id string, cursor int64, ids ...string) []store.Mail {
	t.Helper()
	ms, cur := mailbox(t, mb, id)
	var got []string
	for i, m := range ms {
		got = append(got, m.ID)
		if m.Seq != cursor+int64(i)+1 {
			t.Fatalf("mailbox of %q: mail %q has Seq %d, want %d", id, m.ID, m.Seq, cursor+int64(i)+1)
		}
	}
	if cur != cursor || strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("mailbox of %q: cursor %d, mails %q; want cursor %d, mails %q", id, cur, got, cursor, ids)
	}
	return ms
}

func sameMail(a, b store.Mail) bool {
	return a.Seq == b.Seq && a.ID == b.ID && a.From == b.From && a.Type == b.Type &&
		a.RequestID == b.RequestID && a.ReplyTo == b.ReplyTo && a.Content == b.Content && a.Time.Equal(b.Time) &&
		reflect.DeepEqual(a.Parts, b.Parts)
}

// testMailParts: a mail's parts (a text part, a small image inline, a
// blob reference) are kept as given, in every recipient's mailbox, and
// returned for a post repeated; parts that are invalid or hold too many
// bytes inline are refused and deliver nothing.
func testMailParts(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	create(t, s, "r1", "o", long)
	create(t, s, "r2", "o", long)
	parts := []model.Part{
		model.TextPart("see attached"),
		model.Image("image/png", []byte("\x89PNG tiny")),
		{Type: model.PartFile, Name: "report.pdf", MediaType: "application/pdf", Blob: store.BlobHash([]byte("report")), Size: 6},
	}
	m := store.Mail{ID: "p1", From: "alice", Type: "message", Content: "the report", Parts: parts}
	got := post(t, mb, []string{"r1", "r2"}, m)
	for i, id := range []string{"r1", "r2"} {
		ms := wantMailbox(t, mb, id, 0, "p1")
		if !reflect.DeepEqual(ms[0].Parts, parts) || !sameMail(ms[0], got[i]) {
			t.Fatalf("mailbox of %s: parts %+v (post returned %+v), want %+v", id, ms[0].Parts, got[i].Parts, parts)
		}
	}
	again := post(t, mb, []string{"r1"}, store.Mail{ID: "p1", From: "alice", Type: "message", Content: "the report"})[0]
	if !reflect.DeepEqual(again.Parts, parts) {
		t.Fatalf("a repeated post returned parts %+v, want the stored %+v", again.Parts, parts)
	}
	_, err := mb.Post(t.Context(), []string{"r1"}, store.Mail{ID: "bad", Type: "message", Parts: []model.Part{{Type: model.PartImage, MediaType: "text/plain", Data: []byte("x")}}})
	if err == nil {
		t.Fatal("a mail with an invalid part was posted")
	}
	big := model.Image("image/png", make([]byte, store.MaxMailBytes+1))
	_, err = mb.Post(t.Context(), []string{"r1"}, store.Mail{ID: "big", Type: "message", Parts: []model.Part{big}})
	wantErr(t, "a mail with too many bytes inline", err, store.ErrTooLarge)
	wantMailbox(t, mb, "r1", 0, "p1")
}

func testMailRoundTrip(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	ctx := t.Context()
	l := create(t, s, "r1", "o", long)
	create(t, s, "r2", "o", long)
	wantMailbox(t, mb, "r1", 0)

	var sent []store.Mail
	for i := range 3 {
		m := store.Mail{ID: fmt.Sprint("m", i), From: "alice", Type: "message", RequestID: "q" + fmt.Sprint(i),
			ReplyTo: "p", Content: fmt.Sprintf("hello %d ☃", i)}
		got := post(t, mb, []string{"r1"}, m)[0]
		m.Seq = int64(i + 1)
		m.Time = got.Time
		if got.Time.IsZero() || !sameMail(got, m) {
			t.Fatalf("Post returned %+v, want %+v with a time", got, m)
		}
		sent = append(sent, got)
	}
	ms := wantMailbox(t, mb, "r1", 0, "m0", "m1", "m2")
	for i := range ms {
		if !sameMail(ms[i], sent[i]) {
			t.Fatalf("Mailbox[%d] = %+v, want %+v", i, ms[i], sent[i])
		}
	}
	wantMailbox(t, mb, "r2", 0) // other mailboxes are untouched
	if ms, cur, err := mb.Mailbox(ctx, "r1", 2); err != nil || len(ms) != 2 || cur != 0 || ms[1].ID != "m1" {
		t.Fatalf("Mailbox(limit 2) = %+v, %d, %v", ms, cur, err)
	}

	// A turn consumes the first two mails with its journal records.
	appendOK(t, s, l, recs("turn1"), store.Update{AckMail: 2})
	wantMailbox(t, mb, "r1", 2, "m2")
	checkJournal(t, s, "r1", "turn1")
	appendOK(t, s, l, recs("turn2"), store.Update{AckMail: 3})
	wantMailbox(t, mb, "r1", 3)
	// New mails follow.
	if got := post(t, mb, []string{"r1"}, store.Mail{ID: "m3", Type: "message"})[0]; got.Seq != 4 {
		t.Fatalf("mail after the cursor got Seq %d, want 4", got.Seq)
	}
	wantMailbox(t, mb, "r1", 3, "m3")

	_, _, err := mb.Mailbox(ctx, "nope", 0)
	wantErr(t, "Mailbox of an unknown run", err, store.ErrNotFound)
}

// testMailAckRejectedAppend: an Append that fails acknowledges nothing.
func testMailAckRejectedAppend(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	ctx := t.Context()
	old := create(t, s, "r1", "o1", short, rec("a"))
	post(t, mb, []string{"r1"}, store.Mail{ID: "m1"})
	post(t, mb, []string{"r1"}, store.Mail{ID: "m2"})
	time.Sleep(pastShort)
	cur, err := s.Claim(ctx, "r1", "o2", long)
	if err != nil {
		t.Fatal(err)
	}
	// The old owner read the mails, but its turn is rejected: the mails
	// stay for the new owner.
	_, err = s.Append(ctx, old, recs("b"), store.Update{AckMail: 2})
	wantErr(t, "Append with a stale lease", err, store.ErrLeaseLost)
	wantMailbox(t, mb, "r1", 0, "m1", "m2")
	// A conflicting record rolls the acknowledgement back too.
	_, err = s.Append(ctx, cur, recs("a"), store.Update{AckMail: 2})
	wantErr(t, "Append of a recorded key", err, store.ErrConflict)
	wantMailbox(t, mb, "r1", 0, "m1", "m2")

	appendOK(t, s, cur, recs("b"), store.Update{AckMail: 1})
	wantMailbox(t, mb, "r1", 1, "m2")
}

// testMailAckNeverBack: the cursor never moves back, and never past the
// last mail (acknowledging more does not swallow later mails).
func testMailAckNeverBack(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	l := create(t, s, "r1", "o", long)
	for i := range 3 {
		post(t, mb, []string{"r1"}, store.Mail{ID: fmt.Sprint(i)})
	}
	appendOK(t, s, l, nil, store.Update{AckMail: 2})
	appendOK(t, s, l, nil, store.Update{AckMail: 1})
	wantMailbox(t, mb, "r1", 2, "2")
	appendOK(t, s, l, nil, store.Update{AckMail: 1000})
	wantMailbox(t, mb, "r1", 3)
	post(t, mb, []string{"r1"}, store.Mail{ID: "later"})
	wantMailbox(t, mb, "r1", 3, "later")
	appendOK(t, s, l, nil, store.Update{AckMail: 3})
	wantMailbox(t, mb, "r1", 3, "later")
}

// testMailDuplicateID: a mail ID is delivered once per mailbox, even after
// it was consumed; a retry returns the stored mail.
func testMailDuplicateID(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	l := create(t, s, "r1", "o", long)
	create(t, s, "r2", "o", long)
	first := post(t, mb, []string{"r1"}, store.Mail{ID: "m1", Content: "first"})[0]
	again := post(t, mb, []string{"r1"}, store.Mail{ID: "m1", Content: "second"})[0]
	if !sameMail(again, first) {
		t.Fatalf("repeated Post returned %+v, want the stored %+v", again, first)
	}
	wantMailbox(t, mb, "r1", 0, "m1")
	appendOK(t, s, l, nil, store.Update{AckMail: 1})
	if again := post(t, mb, []string{"r1"}, store.Mail{ID: "m1"})[0]; !sameMail(again, first) {
		t.Fatalf("Post after consumption returned %+v, want the stored %+v", again, first)
	}
	wantMailbox(t, mb, "r1", 1)
	// One ID to two mailboxes, one of which has it already.
	out := post(t, mb, []string{"r1", "r2"}, store.Mail{ID: "m1", Content: "third"})
	if !sameMail(out[0], first) || out[1].Seq != 1 || out[1].Content != "third" {
		t.Fatalf("Post to [r1 r2] = %+v", out)
	}
	wantMailbox(t, mb, "r1", 1)
	wantMailbox(t, mb, "r2", 0, "m1")
}

// testMailAllOrNothing: a post with one unknown recipient posts nothing
// and wakes nobody.
func testMailAllOrNothing(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	l := create(t, s, "r1", "o", long)
	create(t, s, "r2", "o", long)
	appendOK(t, s, l, recs("idle"), store.Update{State: store.Paused, Reason: store.AwaitingMail})
	_, err := mb.Post(t.Context(), []string{"r1", "nope", "r2"}, store.Mail{ID: "m"})
	wantErr(t, "Post with an unknown recipient", err, store.ErrNotFound)
	if !strings.Contains(err.Error(), "nope") {
		t.Errorf("error %q does not name the unknown run", err)
	}
	wantMailbox(t, mb, "r1", 0)
	wantMailbox(t, mb, "r2", 0)
	if r := get(t, s, "r1"); r.State != store.Paused {
		t.Fatalf("failed Post woke r1: state %s", r.State)
	}
	// The same ID may be posted once the recipients are right.
	post(t, mb, []string{"r1", "r2"}, store.Mail{ID: "m"})
	wantMailbox(t, mb, "r2", 0, "m")
}

func testMailFinished(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	create(t, s, "r1", "o", long)
	for i, st := range []store.State{store.Completed, store.Failed, store.Stopped} {
		id := fmt.Sprint("f", i)
		l := create(t, s, id, "o", long)
		appendOK(t, s, l, nil, store.Update{State: st})
		_, err := mb.Post(t.Context(), []string{"r1", id}, store.Mail{ID: "m"})
		wantErr(t, "Post to a "+string(st)+" run", err, store.ErrInvalidState)
		wantMailbox(t, mb, "r1", 0)
		wantMailbox(t, mb, id, 0)
		if r := get(t, s, id); r.State != st {
			t.Fatalf("refused Post changed state to %s", r.State)
		}
	}
}

func testMailTooLarge(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	create(t, s, "r1", "o", long)
	create(t, s, "r2", "o", long)
	big := strings.Repeat("x", store.MaxMailBytes+1)
	_, err := mb.Post(t.Context(), []string{"r1", "r2"}, store.Mail{ID: "big", Content: big})
	wantErr(t, "Post of an oversize mail", err, store.ErrTooLarge)
	if !strings.Contains(err.Error(), "r1") {
		t.Errorf("error %q does not name the run", err)
	}
	_, err = mb.Post(t.Context(), []string{"r1"}, store.Mail{ID: "big", From: strings.Repeat("f", 2<<10)})
	wantErr(t, "Post with an oversize sender", err, store.ErrTooLarge)
	wantMailbox(t, mb, "r1", 0)
	wantMailbox(t, mb, "r2", 0)
	// Exactly the limit is fine, and comes back whole.
	limit := strings.Repeat("y", store.MaxMailBytes)
	post(t, mb, []string{"r1"}, store.Mail{ID: "max", Content: limit})
	if ms := wantMailbox(t, mb, "r1", 0, "max"); ms[0].Content != limit {
		t.Fatalf("mail of %d bytes came back with %d", len(limit), len(ms[0].Content))
	}
}

func testMailBadInput(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	create(t, s, "r1", "o", long)
	for _, c := range []struct {
		what string
		to   []string
		m    store.Mail
	}{
		{"no recipient", nil, store.Mail{ID: "m"}},
		{"an empty recipient", []string{"r1", ""}, store.Mail{ID: "m"}},
		{"a repeated recipient", []string{"r1", "r1"}, store.Mail{ID: "m"}},
		{"an empty id", []string{"r1"}, store.Mail{Content: "x"}},
	} {
		if out, err := mb.Post(t.Context(), c.to, c.m); err == nil {
			t.Errorf("Post with %s succeeded: %+v", c.what, out)
		}
	}
	wantMailbox(t, mb, "r1", 0)
}

// testMailWakesPaused: a mail to a run that waits for mail makes it
// runnable in the same step, and watchers hear of it; a mail to a running
// run leaves its owner alone.
func testMailWakesPaused(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	ctx := t.Context()
	l := create(t, s, "r1", "o1", long)
	appendOK(t, s, l, recs("idle"), store.Update{State: store.Paused, Reason: store.AwaitingMail})
	var ch <-chan store.Change
	if _, ok := s.(store.Watcher); ok {
		ch = watcher(t, ctx, s)
	}
	post(t, mb, []string{"r1"}, store.Mail{ID: "wake", From: "lead", Content: "work"})
	if r := get(t, s, "r1"); r.State != store.Running || r.Owner != "" || r.Epoch != 1 {
		t.Fatalf("after a mail to a paused run: state %s owner %q epoch %d; want running, unowned, 1", r.State, r.Owner, r.Epoch)
	}
	if ch != nil {
		expect(t, ch, "mail to a paused run", change("r1", store.ChangeInbox), change("r1", store.ChangeRunnable))
	}
	ls, err := s.ClaimExpired(ctx, "o2", long, 10)
	if err != nil || len(ls) != 1 || ls[0].RunID != "r1" {
		t.Fatalf("ClaimExpired after the mail = %+v, %v", ls, err)
	}
	wantMailbox(t, mb, "r1", 0, "wake")

	// Running and owned: the mail waits for the owner.
	post(t, mb, []string{"r1"}, store.Mail{ID: "more"})
	if r := get(t, s, "r1"); r.State != store.Running || r.Owner != "o2" || r.Epoch != ls[0].Epoch {
		t.Fatalf("a mail changed a running run: %+v", r)
	}
	if ch != nil {
		create(t, s, "marker", "o1", long)
		expect(t, ch, "mail to a running run", change("r1", store.ChangeInbox), change("marker", store.ChangeAppended))
	}
}

// testMailBeforeIdle: a run that goes idle (an append pausing it for
// mail) while its mailbox holds mail it has not acknowledged is runnable
// instead, in the same append: a mail posted while it was still working
// (which did not wake it) is never left unread by a run nobody will wake,
// even if its process dies right after the append. An append that
// acknowledges every mail it pauses with leaves it paused.
func testMailBeforeIdle(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	ctx := t.Context()
	l := create(t, s, "r1", "o1", long)
	post(t, mb, []string{"r1"}, store.Mail{ID: "early", From: "lead", Content: "work"})
	var ch <-chan store.Change
	if _, ok := s.(store.Watcher); ok {
		ch = watcher(t, ctx, s)
	}
	appendOK(t, s, l, recs("idle"), store.Update{State: store.Paused, Reason: store.AwaitingMail})
	if r := get(t, s, "r1"); r.State != store.Running || r.Owner != "" {
		t.Fatalf("idle with a mail unread: state %s owner %q; want running and unowned", r.State, r.Owner)
	}
	if ch != nil {
		expect(t, ch, "idle with a mail unread", change("r1", store.ChangeAppended), change("r1", store.ChangeRunnable))
	}
	ls, err := s.ClaimExpired(ctx, "o2", long, 10)
	if err != nil || len(ls) != 1 || ls[0].RunID != "r1" {
		t.Fatalf("ClaimExpired of the woken run = %+v, %v", ls, err)
	}
	wantMailbox(t, mb, "r1", 0, "early")

	// It reads the mail (acknowledged with its append) and goes idle:
	// nothing is left unread, so it stays paused.
	appendOK(t, s, ls[0], recs("read"), store.Update{AckMail: 1})
	appendOK(t, s, ls[0], recs("idle2"), store.Update{State: store.Paused, Reason: store.AwaitingMail})
	if r := get(t, s, "r1"); r.State != store.Paused || r.Reason != store.AwaitingMail {
		t.Fatalf("idle with every mail read: state %s reason %q; want paused for mail", r.State, r.Reason)
	}
	// The same when the append that goes idle acknowledges the mail.
	post(t, mb, []string{"r1"}, store.Mail{ID: "next"}) // wakes it
	l2, err := s.Claim(ctx, "r1", "o3", long)
	if err != nil {
		t.Fatal(err)
	}
	appendOK(t, s, l2, recs("idle3"), store.Update{State: store.Paused, Reason: store.AwaitingMail, AckMail: 2})
	if r := get(t, s, "r1"); r.State != store.Paused {
		t.Fatalf("idle acknowledging every mail: state %s; want paused", r.State)
	}
	// A pause for anything else is left as it is, mail or not.
	l3 := create(t, s, "r2", "o1", long)
	post(t, mb, []string{"r2"}, store.Mail{ID: "m"})
	appendOK(t, s, l3, recs("ask"), store.Update{State: store.Paused, Reason: "awaiting approval"})
	if r := get(t, s, "r2"); r.State != store.Paused {
		t.Fatalf("a pause for a human with mail unread: state %s; want paused", r.State)
	}
}

// testMailLeavesOtherPauses: a mail to a run paused for anything but mail
// (a user's next message, a human's answer, no reason at all) is kept in
// its mailbox and changes nothing else: the run stays paused with its
// reason, unowned, at its epoch and last record, and nobody may claim it;
// a resume still wakes it as usual, and the mail is still there.
func testMailLeavesOtherPauses(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	ctx := t.Context()
	reasons := []string{"awaiting user message", "approve the refund?", "", store.AwaitingMail + " (not quite)"}
	var to []string
	before := map[string]store.Run{}
	for i, reason := range reasons {
		id := fmt.Sprint("p", i)
		l := create(t, s, id, "o1", long)
		appendOK(t, s, l, recs("pause"), store.Update{State: store.Paused, Reason: reason, Release: true})
		to = append(to, id)
		before[id] = get(t, s, id)
	}
	var ch <-chan store.Change
	if _, ok := s.(store.Watcher); ok {
		ch = watcher(t, ctx, s)
	}
	post(t, mb, to, store.Mail{ID: "m1", From: "alice", Content: "done"})
	post(t, mb, to[:1], store.Mail{ID: "m2", From: "bob", Content: "done too"})
	for i, id := range to {
		r, b := get(t, s, id), before[id]
		if r.State != store.Paused || r.Reason != reasons[i] || r.Owner != "" || r.Epoch != b.Epoch || r.LastSeq != b.LastSeq {
			t.Fatalf("a mail changed %s, paused with reason %q: state %s reason %q owner %q epoch %d last %d; want paused, the same reason, unowned, epoch %d, last %d",
				id, reasons[i], r.State, r.Reason, r.Owner, r.Epoch, r.LastSeq, b.Epoch, b.LastSeq)
		}
		checkJournal(t, s, id, "pause")
	}
	wantMailbox(t, mb, "p0", 0, "m1", "m2")
	wantMailbox(t, mb, "p1", 0, "m1")
	if ch != nil {
		// Told of the mail, never that the run is runnable: the marker's
		// change comes after every change of the posts.
		create(t, s, "marker", "o1", long)
		want := []store.Change{change("p0", store.ChangeInbox)}
		for _, id := range to {
			want = append(want, change(id, store.ChangeInbox))
		}
		expect(t, ch, "mail to runs paused for something else", append(want, change("marker", store.ChangeAppended))...)
	}
	if ls, err := s.ClaimExpired(ctx, "o2", long, 10); err != nil || len(ls) != 0 {
		t.Fatalf("ClaimExpired after the mails = %+v, %v; want nothing", ls, err)
	}
	_, err := s.Claim(ctx, "p0", "o2", long)
	wantErr(t, "Claim of a paused run that got mail", err, store.ErrInvalidState)

	// A resume answers the pause as it always does; the mail waits.
	if _, err := s.Send(ctx, "p0", store.Message{Kind: store.MsgResume, Text: "next", Pause: before["p0"].LastSeq}); err != nil {
		t.Fatalf("resume after the mail: %v", err)
	}
	if r := get(t, s, "p0"); r.State != store.Running || r.Owner != "" {
		t.Fatalf("after the resume: state %s owner %q; want running, unowned", r.State, r.Owner)
	}
	wantMailbox(t, mb, "p0", 0, "m1", "m2")
}

func testMailBroadcast(t *testing.T, s store.Store) {
	mb := mailboxes(t, s)
	const members = 20
	var to []string
	for i := range members {
		id := fmt.Sprint("member", i)
		l := create(t, s, id, "o", long)
		switch i % 3 {
		case 0:
			appendOK(t, s, l, recs("idle"), store.Update{State: store.Paused, Reason: store.AwaitingMail})
		case 1:
			appendOK(t, s, l, recs("asking"), store.Update{State: store.Paused, Reason: "awaiting user message"})
		}
		to = append(to, id)
	}
	m := store.Mail{ID: "b1", From: "lead", Type: "broadcast", Content: "status update: phase 1 complete"}
	out := post(t, mb, to, m)
	for i := range out {
		if out[i].Seq != 1 || out[i].ID != "b1" || !out[i].Time.Equal(out[0].Time) {
			t.Fatalf("broadcast to %s returned %+v", to[i], out[i])
		}
	}
	post(t, mb, to, m) // a retried broadcast
	for i, id := range to {
		ms := wantMailbox(t, mb, id, 0, "b1")
		if ms[0].Content != m.Content || ms[0].Type != "broadcast" {
			t.Fatalf("mailbox of %s: %+v", id, ms[0])
		}
		// The idle members woke up; the one asking the user still waits.
		want := store.Running
		if i%3 == 1 {
			want = store.Paused
		}
		if r := get(t, s, id); r.State != want {
			t.Fatalf("broadcast left %s %s, want %s", id, r.State, want)
		}
	}
}

func testMailConcurrent(t *testing.T, s store.Store) {
	MailConcurrency(t, s, []store.Store{s, s, s, s}, MailPerSender())
}

// MailPerSender is how many mails each of 4 senders posts in the
// concurrency cases: 2,500 (10,000 in all), or 250 with -short or under
// the race detector, which slows the SQL drivers down many times.
func MailPerSender() int {
	if testing.Short() || raceEnabled {
		return 250
	}
	return 2500
}

// MailConcurrency posts perSender mails from each of senders (each a
// sender of its own, posting in order) to one run of consumer, while a
// consumer drains it as a teammate would: Mailbox, then an Append that
// journals the turn and acknowledges what it read. It checks that every
// mail is consumed exactly once and each sender's mails in order. The
// stores must share their data (one store several times, or several
// handles on one database) and implement store.Mailboxes; the run is
// created through consumer with a fresh id. It returns how long posting
// and draining took.
func MailConcurrency(t testing.TB, consumer store.Store, senders []store.Store, perSender int) time.Duration {
	t.Helper()
	cm := mailboxes(t, consumer)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	id := fmt.Sprintf("inbox-%d", time.Now().UnixNano())
	l, err := consumer.Create(ctx, newRun(id), "consumer", long, nil)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	total := len(senders) * perSender

	var wg sync.WaitGroup
	errs := make(chan error, len(senders)+1)
	mbs := make([]store.Mailboxes, len(senders))
	for i, snd := range senders {
		mbs[i] = mailboxes(t, snd)
	}
	start := time.Now()
	for i, mb := range mbs {
		wg.Go(func() {
			from := fmt.Sprint("s", i)
			for n := range perSender {
				m := store.Mail{ID: fmt.Sprintf("%s-%d", from, n), From: from, Type: "message", Content: strconv.Itoa(n)}
				if _, err := mb.Post(ctx, []string{id}, m); err != nil {
					errs <- fmt.Errorf("sender %s, mail %d: %w", from, n, err)
					cancel()
					return
				}
			}
		})
	}

	next := map[string]int{} // per sender, the number expected next
	turns := 0
	consume := func() error {
		var cursor int64
		for consumed := 0; consumed < total; {
			ms, cur, err := cm.Mailbox(ctx, id, 500)
			if err != nil {
				return fmt.Errorf("Mailbox after %d of %d mails: %w", consumed, total, err)
			}
			if cur != cursor {
				return fmt.Errorf("cursor %d, want %d", cur, cursor)
			}
			if len(ms) == 0 {
				select {
				case <-ctx.Done():
					return fmt.Errorf("consumed %d of %d mails: %w", consumed, total, ctx.Err())
				case <-time.After(time.Millisecond):
				}
				continue
			}
			for j, m := range ms {
				if m.Seq != cursor+int64(j)+1 {
					return fmt.Errorf("mail %q has Seq %d, want %d", m.ID, m.Seq, cursor+int64(j)+1)
				}
				n, err := strconv.Atoi(m.Content)
				if err != nil || m.ID != fmt.Sprintf("%s-%d", m.From, n) {
					return fmt.Errorf("mail %+v was not posted", m)
				}
				if n != next[m.From] {
					return fmt.Errorf("sender %s: got mail %d, want %d (out of order, repeated or lost)", m.From, n, next[m.From])
				}
				next[m.From]++
			}
			turns++
			cursor = ms[len(ms)-1].Seq
			if _, err := consumer.Append(ctx, l, recs(fmt.Sprint("turn", turns)), store.Update{AckMail: cursor}); err != nil {
				return fmt.Errorf("Append acknowledging %d: %w", cursor, err)
			}
			consumed += len(ms)
		}
		return nil
	}
	if err := consume(); err != nil {
		t.Error(err)
		cancel()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return 0
	}
	elapsed := time.Since(start)
	for i := range senders {
		if from := fmt.Sprint("s", i); next[from] != perSender {
			t.Fatalf("sender %s: %d mails consumed, want %d", from, next[from], perSender)
		}
	}
	if ms, cur, err := cm.Mailbox(ctx, id, 0); err != nil || len(ms) != 0 || cur != int64(total) {
		t.Fatalf("after draining: %d mails left, cursor %d, %v; want none, %d", len(ms), cur, err, total)
	}
	t.Logf("%d mails from %d senders consumed in %d turns, %v (%.0f mails/s)", total, len(senders), turns, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
	return elapsed
}
