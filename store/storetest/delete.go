package storetest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

var deleteTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"DeleteTree", testDeleteTree},
	{"DeleteRefused", testDeleteRefused},
	{"DeleteFinished", testDeleteFinished},
	{"DeleteConcurrent", testDeleteConcurrent},
}

// deleter returns s as store.Deleter, skipping t if it is not one.
func deleter(t testing.TB, s store.Store) store.Deleter {
	t.Helper()
	d, ok := s.(store.Deleter)
	if !ok {
		t.Skipf("%T does not implement store.Deleter: delete cases skipped", s)
	}
	return d
}

// createChild creates run id below parent, leased to "o".
func createChild(t *testing.T, s store.Store, id, parent string) store.Lease {
	t.Helper()
	r := newRun(id)
	r.Parent = parent
	l, err := s.Create(t.Context(), r, "o", long, recs("k"))
	if err != nil {
		t.Fatalf("Create(%s below %s): %v", id, parent, err)
	}
	return l
}

// finish ends the run of lease l in state st (a pause if st is Paused).
func finish(t *testing.T, s store.Store, l store.Lease, st store.State) {
	t.Helper()
	appendOK(t, s, l, recs("end-"+string(st)), store.Update{State: st, Reason: "because"})
}

// keepAll gives run id something of every kind a store keeps for a run:
// journal (already), a pending inbox message, mail, a snapshot, a team
// board and requests (as a lead), and a budget pool.
func keepAll(t *testing.T, s store.Store, id string) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.Send(ctx, id, store.Message{Kind: store.MsgStop, Text: "halt"}); err != nil {
		t.Fatalf("Send(%s): %v", id, err)
	}
	spend(t, s, id, store.Pool{Calls: 2, Tokens: 30})
	if mb, ok := s.(store.Mailboxes); ok {
		if _, err := mb.Post(ctx, []string{id}, store.Mail{ID: "m-" + id, Type: "message", Content: "hi"}); err != nil {
			t.Fatalf("Post(%s): %v", id, err)
		}
	}
	if ss, ok := s.(store.Snapshots); ok {
		if err := ss.PutSnapshot(ctx, id, snap(1, `{}`)); err != nil {
			t.Fatalf("PutSnapshot(%s): %v", id, err)
		}
	}
	if ts, ok := s.(store.Teams); ok {
		if _, err := ts.AddTask(ctx, id, store.Task{Subject: "work of " + id}); err != nil {
			t.Fatalf("AddTask(%s): %v", id, err)
		}
		if _, err := ts.AddRequest(ctx, id, store.Request{ID: "q", Kind: "shutdown", From: "lead", To: "m"}); err != nil {
			t.Fatalf("AddRequest(%s): %v", id, err)
		}
	}
}

// checkKept fails t unless run id still has what keepAll gave it.
func checkKept(t *testing.T, s store.Store, id string) {
	t.Helper()
	ctx := t.Context()
	if len(read(t, s, id)) == 0 || len(inbox(t, s, id)) != 1 {
		t.Errorf("run %s lost its journal or inbox", id)
	}
	if p := spend(t, s, id, store.Pool{}); p.Calls != 2 || p.Tokens != 30 {
		t.Errorf("run %s's pool is %+v, want 2 calls and 30 tokens", id, p)
	}
	if mb, ok := s.(store.Mailboxes); ok {
		if m, _, err := mb.Mailbox(ctx, id, 0); err != nil || len(m) != 1 {
			t.Errorf("run %s's mailbox: %d mails, %v; want 1", id, len(m), err)
		}
	}
	if ss, ok := s.(store.Snapshots); ok {
		if _, err := ss.Snapshot(ctx, id); err != nil {
			t.Errorf("run %s's snapshot: %v", id, err)
		}
	}
	if ts, ok := s.(store.Teams); ok {
		tasks, err := ts.Tasks(ctx, id)
		reqs, rerr := ts.Requests(ctx, id)
		if err != nil || rerr != nil || len(tasks) != 1 || len(reqs) != 1 {
			t.Errorf("team %s: %d tasks (%v), %d requests (%v); want 1 and 1", id, len(tasks), err, len(reqs), rerr)
		}
	}
}

// checkGone fails t unless nothing of run id is left: a new run with its
// id starts empty.
func checkGone(t *testing.T, s store.Store, id string) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.Get(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%s) after delete: %v, want ErrNotFound", id, err)
	}
	if _, err := s.Read(ctx, id, 0, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Read(%s) after delete: %v, want ErrNotFound", id, err)
	}
	create(t, s, id, "o", long)
	if n := len(read(t, s, id)); n != 0 {
		t.Errorf("run %s created again has %d records", id, n)
	}
	if n := len(inbox(t, s, id)); n != 0 {
		t.Errorf("run %s created again has %d inbox messages", id, n)
	}
	if p := spend(t, s, id, store.Pool{}); p != (store.Pool{}) {
		t.Errorf("run %s created again has pool %+v", id, p)
	}
	if mb, ok := s.(store.Mailboxes); ok {
		if m, cur, err := mb.Mailbox(ctx, id, 0); err != nil || len(m) != 0 || cur != 0 {
			t.Errorf("run %s created again: %d mails, cursor %d, %v", id, len(m), cur, err)
		}
	}
	if ss, ok := s.(store.Snapshots); ok {
		if _, err := ss.Snapshot(ctx, id); !errors.Is(err, store.ErrNoSnapshot) {
			t.Errorf("run %s created again: Snapshot %v, want ErrNoSnapshot", id, err)
		}
	}
	if ts, ok := s.(store.Teams); ok {
		tasks, _ := ts.Tasks(ctx, id)
		reqs, _ := ts.Requests(ctx, id)
		if len(tasks) != 0 || len(reqs) != 0 {
			t.Errorf("team %s created again: %d tasks, %d requests, want none", id, len(tasks), len(reqs))
		}
	}
}

// testDeleteTree: a finished run is deleted with its whole tree and all
// that is kept for each run of it (a team's board goes with its lead);
// nothing of another run is touched.
func testDeleteTree(t *testing.T, s store.Store) {
	d := deleter(t, s)
	lp := create(t, s, "p", "o", long, recs("a", "b")...)
	lc := createChild(t, s, "c", "p")
	lg := createChild(t, s, "g", "c")
	lo := create(t, s, "other", "o", long, recs("x")...)
	lpc := createChild(t, s, "pc", "other") // its id extends p's: no prefix match
	for id, l := range map[string]store.Lease{"p": lp, "c": lc, "g": lg, "other": lo, "pc": lpc} {
		keepAll(t, s, id)
		finish(t, s, l, store.Completed)
	}
	n, err := d.DeleteRun(t.Context(), "p")
	if err != nil || n != 3 {
		t.Fatalf("DeleteRun(p) = %d, %v; want 3 runs deleted", n, err)
	}
	for _, id := range []string{"other", "pc"} {
		checkKept(t, s, id)
	}
	if got := ids(list(t, s, store.Filter{})); strings.Join(got, ",") != "pc,other" {
		t.Errorf("runs left: %v, want [pc other]", got)
	}
	for _, id := range []string{"p", "c", "g"} {
		checkGone(t, s, id)
	}
	if _, err := d.DeleteRun(t.Context(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteRun of an unknown run: %v, want ErrNotFound", err)
	}
}

// testDeleteRefused: a run that is not finished, a tree with a run that
// is not finished, and a child on its own are refused, naming the run,
// and nothing is deleted.
func testDeleteRefused(t *testing.T, s store.Store) {
	d := deleter(t, s)
	create(t, s, "running", "o", long, recs("a")...)
	lp := create(t, s, "paused", "o", long, recs("a")...)
	finish(t, s, lp, store.Paused)
	lr := create(t, s, "root", "o", long, recs("a")...)
	lc := createChild(t, s, "kid", "root")
	createChild(t, s, "grandkid", "kid") // still running
	finish(t, s, lr, store.Stopped)
	finish(t, s, lc, store.Failed)
	for _, c := range []struct{ id, want string }{
		{"running", `run "running" is running`},
		{"paused", `run "paused" is paused`},
		{"root", `run "grandkid" below run "root" is running`},
		{"kid", `run "kid" is a child of run "root"`},
	} {
		n, err := d.DeleteRun(t.Context(), c.id)
		if !errors.Is(err, store.ErrInvalidState) || n != 0 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DeleteRun(%s) = %d, %v; want ErrInvalidState saying %q", c.id, n, err, c.want)
		}
	}
	if got := len(list(t, s, store.Filter{})); got != 5 {
		t.Errorf("%d runs left after refused deletes, want 5", got)
	}
	for _, id := range []string{"running", "paused", "root", "kid", "grandkid"} {
		if len(read(t, s, id)) == 0 {
			t.Errorf("run %s lost its journal", id)
		}
	}
}

// testDeleteFinished: expiring deletes the finished top-level runs last
// updated before the time, with their trees, first created first, at most
// limit at a time; it leaves newer runs, runs not finished, and trees with
// a run not finished.
func testDeleteFinished(t *testing.T, s store.Store) {
	d := deleter(t, s)
	ctx := t.Context()
	// The oldest tree has a run not finished: it is left, and does not
	// hold up the others.
	l4 := create(t, s, "oldbusy", "o", long, recs("a")...)
	createChild(t, s, "oldbusy-kid", "oldbusy") // running
	finish(t, s, l4, store.Stopped)
	l1 := create(t, s, "old1", "o", long, recs("a")...)
	lk := createChild(t, s, "old1-kid", "old1")
	finish(t, s, lk, store.Completed)
	finish(t, s, l1, store.Completed)
	l2 := create(t, s, "old2", "o", long, recs("a")...)
	finish(t, s, l2, store.Failed)
	create(t, s, "oldrunning", "o", long, recs("a")...)
	l3 := create(t, s, "oldpaused", "o", long, recs("a")...)
	finish(t, s, l3, store.Paused)
	time.Sleep(20 * time.Millisecond)
	before := time.Now()
	time.Sleep(20 * time.Millisecond)
	l5 := create(t, s, "new", "o", long, recs("a")...)
	finish(t, s, l5, store.Completed)

	n, err := d.DeleteFinished(ctx, before, 1)
	if err != nil || n != 2 {
		t.Fatalf("DeleteFinished(limit 1) = %d, %v; want old1 and its child, 2 runs", n, err)
	}
	if _, err := s.Get(ctx, "old1-kid"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("old1's child after expiry: %v, want ErrNotFound", err)
	}
	total := 0
	for range 10 {
		n, err := d.DeleteFinished(ctx, before, 10)
		if err != nil {
			t.Fatalf("DeleteFinished: %v", err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if total != 1 {
		t.Errorf("then DeleteFinished deleted %d runs, want 1 (old2)", total)
	}
	got := ids(list(t, s, store.Filter{}))
	if strings.Join(got, ",") != "new,oldpaused,oldrunning,oldbusy-kid,oldbusy" {
		t.Errorf("runs left: %v", got)
	}
}

func list(t *testing.T, s store.Store, f store.Filter) []store.Run {
	t.Helper()
	runs, err := s.List(t.Context(), f)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return runs
}

// testDeleteConcurrent: of concurrent deletes of one tree, exactly one
// deletes it, whole; the others find nothing (ErrNotFound).
func testDeleteConcurrent(t *testing.T, s store.Store) {
	d := deleter(t, s)
	lp := create(t, s, "p", "o", long, recs("a")...)
	lc := createChild(t, s, "c", "p")
	finish(t, s, lc, store.Completed)
	finish(t, s, lp, store.Completed)
	const n = 4
	counts := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { counts[i], errs[i] = d.DeleteRun(t.Context(), "p") })
	}
	wg.Wait()
	won := 0
	for i := range n {
		switch {
		case errs[i] == nil && counts[i] == 2:
			won++
		case errors.Is(errs[i], store.ErrNotFound) && counts[i] == 0:
		default:
			t.Errorf("delete %d: %d runs, %v", i, counts[i], errs[i])
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent deletes deleted the tree, want 1", won, n)
	}
}
