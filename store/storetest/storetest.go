// Package storetest is a conformance suite for implementations of
// [store.Store], in the manner of testing/slogtest.
//
// An implementation's tests call [Run] with a function that opens a fresh,
// empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
//	}
//
// Besides the rules written in the store package's documentation, the suite
// pins down a few points the interface leaves implicit, so that all stores
// behave alike:
//
//   - Append, Claim, Release, Send, Inbox and Read on an unknown run fail with
//     store.ErrNotFound.
//   - Release of a lease that is no longer current fails with
//     store.ErrLeaseLost and changes nothing.
//   - A lease's expiry alone does not invalidate it: until another claim
//     bumps the epoch (or the run is released or finished), the holder may
//     still append, and Renew extends it.
//   - Keys are unique per run, including the empty key.
//   - Inbox message IDs grow with every Send and are assigned by the store.
//   - Byte slices passed in or returned are never aliased by the store.
//   - Spend works without a lease, in every state, and changes nothing but
//     the pool: not the row's other fields, its journal or its lease.
//   - Mailboxes (when the store has them): Mailbox on an unknown run fails
//     with store.ErrNotFound; Update.AckMail never moves the cursor past
//     the last mail, so acknowledging too much cannot swallow later mails;
//     Post rejects bad input (see store.CheckMail) with nothing posted.
//   - Teams (when the store has them): a team needs no run of its own; a
//     task's owner run that the store does not know counts as live; bad
//     input (see store.CheckTask, CheckRequest, CheckResolve) changes
//     nothing and uses up no task ID.
//   - Deleter (when the store has it): a run created again with a deleted
//     run's id starts empty (no records, messages, mail, snapshot, pool,
//     tasks or requests of the deleted one).
//   - Blobs (when the store has them, with a Deleter): a run sees only the
//     blobs it refers to; deleting runs collects the blobs no run refers
//     to any longer, in DeleteRun and in DeleteFinished.
//
// Lease-expiry tests use leases of 50ms and sleep past them; no test asserts
// how long an operation takes.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

const (
	// short is a lease that the tests let expire.
	short = 50 * time.Millisecond
	// pastShort is how long the tests sleep for a short lease to expire.
	pastShort = 150 * time.Millisecond
	// long is a lease that does not expire during a test.
	long = time.Hour
)

// Run runs the conformance suite. Each subtest calls open for a new, empty
// store and closes it when the subtest ends.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Create", testCreate},
		{"CreateExists", testCreateExists},
		{"CreateConflict", testCreateConflict},
		{"Get", testGet},
		{"List", testList},
		{"ListPaging", testListPaging},
		{"ListKeyset", testListKeyset},
		{"Read", testRead},
		{"Append", testAppend},
		{"AppendUpdate", testAppendUpdate},
		{"AppendClearReason", testAppendClearReason},
		{"AppendConflict", testAppendConflict},
		{"AppendLeaseLost", testAppendLeaseLost},
		{"AppendReleases", testAppendReleases},
		{"AppendAckInbox", testAppendAckInbox},
		{"NoAliasing", testNoAliasing},
		{"Claim", testClaim},
		{"ClaimExpiredLease", testClaimExpiredLease},
		{"ClaimErrors", testClaimErrors},
		{"ClaimExpired", testClaimExpired},
		{"ClaimExpiredLimit", testClaimExpiredLimit},
		{"ClaimExpiredOrder", testClaimExpiredOrder},
		{"Renew", testRenew},
		{"Release", testRelease},
		{"SendResume", testSendResume},
		{"SendResumeAtPause", testSendResumeAtPause},
		{"SendResumeParts", testSendResumeParts},
		{"SendStop", testSendStop},
		{"Inbox", testInbox},
		{"ConcurrentAppendSameRun", testConcurrentAppendSameRun},
		{"ConcurrentAppendManyRuns", testConcurrentAppendManyRuns},
		{"ConcurrentCreate", testConcurrentCreate},
		{"ConcurrentClaim", testConcurrentClaim},
		{"ConcurrentClaimExpired", testConcurrentClaimExpired},
		{"StaleLeaseAfterClaim", testStaleLeaseAfterClaim},
		{"Watch", testWatch},
		{"WatchCancel", testWatchCancel},
		{"BadInput", testBadInput},
		{"Spend", testSpend},
		{"SpendErrors", testSpendErrors},
		{"ConcurrentSpend", testConcurrentSpend},
		{"CreateReserving", testCreateReserving},
	}
	tests = append(tests, mailTests...)
	tests = append(tests, teamTests...)
	tests = append(tests, snapshotTests...)
	tests = append(tests, secretTests...)
	tests = append(tests, deleteTests...)
	tests = append(tests, memoryTests...)
	tests = append(tests, blobTests...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			if s == nil {
				t.Fatal("open returned a nil store")
			}
			defer func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			tt.fn(t, s)
		})
	}
}

// t0 is a fixed record time with a non-zero nanosecond part.
var t0 = time.Date(2025, 3, 4, 5, 6, 7, 891011121, time.UTC)

func rec(key string) store.Record {
	return store.Record{
		Key:  key,
		Type: "test." + key,
		Data: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key)),
		Time: t0,
	}
}

func recs(keys ...string) []store.Record {
	out := make([]store.Record, len(keys))
	for i, k := range keys {
		out[i] = rec(k)
	}
	return out
}

func newRun(id string) store.Run {
	return store.Run{ID: id, Swarm: "sw", MaxTurns: 10}
}

func create(t *testing.T, s store.Store, id, owner string, lease time.Duration, records ...store.Record) store.Lease {
	t.Helper()
	l, err := s.Create(t.Context(), newRun(id), owner, lease, records)
	if err != nil {
		t.Fatalf("Create(%q): %v", id, err)
	}
	return l
}

func get(t *testing.T, s store.Store, id string) store.Run {
	t.Helper()
	r, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return r
}

func appendOK(t *testing.T, s store.Store, l store.Lease, records []store.Record, u store.Update) int64 {
	t.Helper()
	seq, err := s.Append(t.Context(), l, records, u)
	if err != nil {
		t.Fatalf("Append(%+v): %v", l, err)
	}
	return seq
}

func read(t *testing.T, s store.Store, id string) []store.Record {
	t.Helper()
	rs, err := s.Read(t.Context(), id, 0, 0)
	if err != nil {
		t.Fatalf("Read(%q): %v", id, err)
	}
	return rs
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// checkJournal verifies that id's journal holds exactly keys, in order, with
// seqs 1..n, and that the row's LastSeq is n.
func checkJournal(t *testing.T, s store.Store, id string, keys ...string) {
	t.Helper()
	rs := read(t, s, id)
	var got []string
	for i, r := range rs {
		if r.Seq != int64(i+1) {
			t.Fatalf("run %q: record %d has Seq %d, want %d", id, i, r.Seq, i+1)
		}
		got = append(got, r.Key)
		want := rec(r.Key)
		if r.Type != want.Type || !bytes.Equal(r.Data, want.Data) || !r.Time.Equal(want.Time) {
			t.Fatalf("run %q: record %d = {%q %q %s %v}, want {%q %q %s %v}", id, i,
				r.Key, r.Type, r.Data, r.Time, want.Key, want.Type, want.Data, want.Time)
		}
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("run %q: journal keys %q, want %q", id, got, keys)
	}
	if last := get(t, s, id).LastSeq; last != int64(len(keys)) {
		t.Fatalf("run %q: LastSeq %d, want %d", id, last, len(keys))
	}
}

func ids(runs []store.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func testCreate(t *testing.T, s store.Store) {
	before := time.Now()
	in := store.Run{
		ID: "r1", Swarm: "sw", Parent: "p0", MaxTurns: 7, Agent: "planner",
		// Fields the store must overwrite.
		State: store.Completed, Owner: "someone", Epoch: 42, LastSeq: 99,
		LeaseUntil: time.Unix(1, 0), CreatedAt: time.Unix(2, 0), UpdatedAt: time.Unix(3, 0),
	}
	l, err := s.Create(t.Context(), in, "o1", long, recs("a", "b", "c"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if want := (store.Lease{RunID: "r1", Owner: "o1", Epoch: 1}); l != want {
		t.Fatalf("Create lease = %+v, want %+v", l, want)
	}
	r := get(t, s, "r1")
	if r.ID != "r1" || r.Swarm != "sw" || r.Parent != "p0" || r.MaxTurns != 7 || r.Agent != "planner" {
		t.Errorf("Get = %+v: caller's fields not kept", r)
	}
	if r.State != store.Running || r.Owner != "o1" || r.Epoch != 1 || r.LastSeq != 3 {
		t.Errorf("Get: State %q Owner %q Epoch %d LastSeq %d, want running o1 1 3", r.State, r.Owner, r.Epoch, r.LastSeq)
	}
	if r.CreatedAt.Before(before.Add(-time.Minute)) || r.UpdatedAt.Before(before.Add(-time.Minute)) {
		t.Errorf("Get: CreatedAt %v UpdatedAt %v not set by the store", r.CreatedAt, r.UpdatedAt)
	}
	if !r.LeaseUntil.After(before.Add(long / 2)) {
		t.Errorf("Get: LeaseUntil %v, want about now+%v", r.LeaseUntil, long)
	}
	checkJournal(t, s, "r1", "a", "b", "c")

	// A run without records.
	create(t, s, "r2", "o1", long)
	if r := get(t, s, "r2"); r.LastSeq != 0 {
		t.Errorf("run without records: LastSeq %d, want 0", r.LastSeq)
	}
	checkJournal(t, s, "r2")
	appendOK(t, s, store.Lease{RunID: "r2", Owner: "o1", Epoch: 1}, recs("x"), store.Update{})
	checkJournal(t, s, "r2", "x")
}

func testCreateExists(t *testing.T, s store.Store) {
	create(t, s, "r1", "o1", long, rec("a"))
	_, err := s.Create(t.Context(), newRun("r1"), "o2", long, recs("b", "c"))
	wantErr(t, "second Create", err, store.ErrExists)
	r := get(t, s, "r1")
	if r.Owner != "o1" || r.Epoch != 1 {
		t.Errorf("after duplicate Create: Owner %q Epoch %d, want o1 1", r.Owner, r.Epoch)
	}
	checkJournal(t, s, "r1", "a")
}

func testCreateConflict(t *testing.T, s store.Store) {
	_, err := s.Create(t.Context(), newRun("r1"), "o1", long, recs("a", "b", "a"))
	wantErr(t, "Create with a repeated key", err, store.ErrConflict)
	_, err = s.Get(t.Context(), "r1")
	wantErr(t, "Get after failed Create", err, store.ErrNotFound)
	// The id is still free.
	create(t, s, "r1", "o1", long, rec("a"))
	checkJournal(t, s, "r1", "a")
}

func testGet(t *testing.T, s store.Store) {
	_, err := s.Get(t.Context(), "nope")
	wantErr(t, "Get unknown run", err, store.ErrNotFound)
	create(t, s, "r1", "o1", long)
	if r := get(t, s, "r1"); r.ID != "r1" {
		t.Fatalf("Get: ID %q", r.ID)
	}
	_, err = s.Get(t.Context(), "r")
	wantErr(t, "Get id prefix", err, store.ErrNotFound)
}

func testList(t *testing.T, s store.Store) {
	ctx := t.Context()
	mk := func(id, swarm, parent string) store.Lease {
		t.Helper()
		l, err := s.Create(ctx, store.Run{ID: id, Swarm: swarm, Parent: parent}, "o", long, nil)
		if err != nil {
			t.Fatalf("Create(%q): %v", id, err)
		}
		return l
	}
	mk("a", "s1", "")
	lb := mk("b", "s2", "")
	mk("c", "s1", "a")
	ld := mk("d", "s1", "a")
	mk("e", "s2", "b")
	appendOK(t, s, lb, nil, store.Update{State: store.Paused, Reason: "wait"})
	appendOK(t, s, ld, nil, store.Update{State: store.Completed})

	cases := []struct {
		f    store.Filter
		want []string
	}{
		{store.Filter{}, []string{"e", "d", "c", "b", "a"}},
		{store.Filter{Swarm: "s1"}, []string{"d", "c", "a"}},
		{store.Filter{Swarm: "s2"}, []string{"e", "b"}},
		{store.Filter{Swarm: "none"}, nil},
		{store.Filter{State: store.Running}, []string{"e", "c", "a"}},
		{store.Filter{State: store.Paused}, []string{"b"}},
		{store.Filter{State: store.Completed}, []string{"d"}},
		{store.Filter{State: store.Failed}, nil},
		{store.Filter{Parent: "a"}, []string{"d", "c"}},
		{store.Filter{Parent: "b"}, []string{"e"}},
		{store.Filter{Swarm: "s1", Parent: "a", State: store.Running}, []string{"c"}},
	}
	for _, c := range cases {
		got, err := s.List(ctx, c.f)
		if err != nil {
			t.Fatalf("List(%+v): %v", c.f, err)
		}
		if !slices.Equal(ids(got), c.want) {
			t.Errorf("List(%+v) = %q, want %q", c.f, ids(got), c.want)
		}
	}
	got, err := s.List(ctx, store.Filter{State: store.Paused})
	if err != nil || len(got) != 1 {
		t.Fatalf("List paused: %v %v", got, err)
	}
	if r := got[0]; r.Swarm != "s2" || r.Reason != "wait" || r.State != store.Paused {
		t.Errorf("List row = %+v, want full row of b", r)
	}
}

func testListPaging(t *testing.T, s store.Store) {
	ctx := t.Context()
	var all []string
	for i := range 7 {
		id := fmt.Sprintf("r%d", i)
		create(t, s, id, "o", long)
		all = append([]string{id}, all...) // newest first
	}
	cases := []struct {
		limit, offset int
		want          []string
	}{
		{0, 0, all},
		{3, 0, all[:3]},
		{3, 3, all[3:6]},
		{3, 6, all[6:]},
		{0, 2, all[2:]},
		{100, 0, all},
		{3, 7, nil},
		{0, 100, nil},
	}
	for _, c := range cases {
		got, err := s.List(ctx, store.Filter{Limit: c.limit, Offset: c.offset})
		if err != nil {
			t.Fatalf("List(limit %d, offset %d): %v", c.limit, c.offset, err)
		}
		if !slices.Equal(ids(got), c.want) {
			t.Errorf("List(limit %d, offset %d) = %q, want %q", c.limit, c.offset, ids(got), c.want)
		}
	}
	got, err := s.List(ctx, store.Filter{Swarm: "sw", Limit: 2, Offset: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), all[1:3]) {
		t.Errorf("List(swarm, limit 2, offset 1) = %q, want %q", ids(got), all[1:3])
	}
}

// testListKeyset checks the filters a dashboard lists with: pages after a
// run (Before), top-level runs, an id prefix and a creation-time window.
func testListKeyset(t *testing.T, s store.Store) {
	ctx := t.Context()
	mk := func(id, swarm, parent string) store.Run {
		t.Helper()
		if _, err := s.Create(ctx, store.Run{ID: id, Swarm: swarm, Parent: parent}, "o", long, nil); err != nil {
			t.Fatalf("Create(%q): %v", id, err)
		}
		return get(t, s, id)
	}
	a := mk("ka", "s1", "")
	mk("kb", "s2", "")
	mk("kc", "s1", "ka")
	mk("xd", "s1", "")
	e := mk("ke", "s2", "kb")
	list := func(f store.Filter) []string {
		t.Helper()
		got, err := s.List(ctx, f)
		if err != nil {
			t.Fatalf("List(%+v): %v", f, err)
		}
		return ids(got)
	}
	cases := []struct {
		f    store.Filter
		want []string
	}{
		{store.Filter{Before: "xd"}, []string{"kc", "kb", "ka"}},
		{store.Filter{Before: "xd", Limit: 2}, []string{"kc", "kb"}},
		{store.Filter{Before: "kb", Limit: 2}, []string{"ka"}},
		{store.Filter{Before: "ka"}, nil},
		{store.Filter{Before: "nope"}, nil},
		{store.Filter{Before: "ke", Swarm: "s1"}, []string{"xd", "kc", "ka"}},
		{store.Filter{TopLevel: true}, []string{"xd", "kb", "ka"}},
		{store.Filter{TopLevel: true, Parent: "kb"}, []string{"ke"}},
		{store.Filter{TopLevel: true, Before: "xd"}, []string{"kb", "ka"}},
		{store.Filter{IDPrefix: "k"}, []string{"ke", "kc", "kb", "ka"}},
		{store.Filter{IDPrefix: "x"}, []string{"xd"}},
		{store.Filter{IDPrefix: "kc"}, []string{"kc"}},
		{store.Filter{IDPrefix: "%"}, nil},
		{store.Filter{IDPrefix: "_"}, nil},
		{store.Filter{Since: a.CreatedAt}, []string{"ke", "xd", "kc", "kb", "ka"}},
		{store.Filter{Since: e.CreatedAt.Add(time.Nanosecond)}, nil},
		{store.Filter{Until: a.CreatedAt}, nil},
		{store.Filter{Until: e.CreatedAt.Add(time.Nanosecond), IDPrefix: "ke"}, []string{"ke"}},
	}
	for _, c := range cases {
		if got := list(c.f); !slices.Equal(got, c.want) {
			t.Errorf("List(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
	// Walking pages with Before visits every run once, newest first.
	var walked []string
	for f := (store.Filter{Limit: 2}); ; {
		page := list(f)
		walked = append(walked, page...)
		if len(page) < f.Limit {
			break
		}
		f.Before = page[len(page)-1]
	}
	if want := []string{"ke", "xd", "kc", "kb", "ka"}; !slices.Equal(walked, want) {
		t.Errorf("pages with Before = %q, want %q", walked, want)
	}
}

func testRead(t *testing.T, s store.Store) {
	ctx := t.Context()
	keys := []string{"k1", "k2", "k3", "k4", "k5"}
	create(t, s, "r1", "o", long, recs(keys...)...)
	create(t, s, "empty", "o", long)

	cases := []struct {
		after int64
		limit int
		want  []string
	}{
		{0, 0, keys},
		{0, -1, keys},
		{0, 2, keys[:2]},
		{2, 0, keys[2:]},
		{2, 2, keys[2:4]},
		{4, 10, keys[4:]},
		{5, 0, nil},
		{50, 0, nil},
		{-3, 1, keys[:1]},
	}
	for _, c := range cases {
		rs, err := s.Read(ctx, "r1", c.after, c.limit)
		if err != nil {
			t.Fatalf("Read(after %d, limit %d): %v", c.after, c.limit, err)
		}
		var got []string
		for i, r := range rs {
			if r.Seq != max(c.after, 0)+int64(i)+1 {
				t.Errorf("Read(after %d, limit %d): record %d has Seq %d", c.after, c.limit, i, r.Seq)
			}
			got = append(got, r.Key)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Read(after %d, limit %d) = %q, want %q", c.after, c.limit, got, c.want)
		}
	}
	rs, err := s.Read(ctx, "empty", 0, 0)
	if err != nil || len(rs) != 0 {
		t.Errorf("Read of a run without records = %v, %v; want none, nil", rs, err)
	}
	_, err = s.Read(ctx, "nope", 0, 0)
	wantErr(t, "Read unknown run", err, store.ErrNotFound)
}

func testAppend(t *testing.T, s store.Store) {
	l := create(t, s, "r1", "o", long, rec("a"))
	if seq := appendOK(t, s, l, recs("b", "c"), store.Update{}); seq != 3 {
		t.Errorf("Append returned %d, want 3", seq)
	}
	if seq := appendOK(t, s, l, nil, store.Update{Turn: 1}); seq != 3 {
		t.Errorf("Append without records returned %d, want 3", seq)
	}
	if seq := appendOK(t, s, l, recs("d"), store.Update{}); seq != 4 {
		t.Errorf("Append returned %d, want 4", seq)
	}
	// A record without data, and a record whose Seq the caller set wrongly.
	bare := store.Record{Key: "e", Type: "bare", Time: t0}
	wrong := rec("f")
	wrong.Seq = 77
	if seq := appendOK(t, s, l, []store.Record{bare, wrong}, store.Update{}); seq != 6 {
		t.Errorf("Append returned %d, want 6", seq)
	}
	rs := read(t, s, "r1")
	if len(rs) != 6 {
		t.Fatalf("journal has %d records, want 6", len(rs))
	}
	if r := rs[4]; r.Seq != 5 || r.Key != "e" || r.Type != "bare" || len(r.Data) != 0 || !r.Time.Equal(t0) {
		t.Errorf("record without data read back as %+v", r)
	}
	if rs[5].Seq != 6 {
		t.Errorf("caller-set Seq kept: %d, want 6", rs[5].Seq)
	}
	if r := get(t, s, "r1"); r.LastSeq != 6 || r.Owner != "o" || r.Epoch != 1 || r.State != store.Running {
		t.Errorf("row after appends = %+v", r)
	}
	_, err := s.Append(t.Context(), store.Lease{RunID: "nope", Owner: "o", Epoch: 1}, recs("x"), store.Update{})
	wantErr(t, "Append to unknown run", err, store.ErrNotFound)
}

func testAppendUpdate(t *testing.T, s store.Store) {
	l := create(t, s, "r1", "o", long)
	usage := model.Usage{InputTokens: 10, OutputTokens: 20, CachedInputTokens: 3, ReasoningTokens: 4, Calls: 2}
	appendOK(t, s, l, recs("a"), store.Update{
		Turn: 3, MaxTurns: 12, Agent: "coder",
		Result: json.RawMessage(`{"ok":true}`), Reason: "why", Usage: &usage,
	})
	r := get(t, s, "r1")
	if r.Turn != 3 || r.MaxTurns != 12 || r.Agent != "coder" || string(r.Result) != `{"ok":true}` ||
		r.Reason != "why" || r.Usage != usage || r.State != store.Running || r.Owner != "o" {
		t.Fatalf("row after update = %+v", r)
	}
	// Zero fields leave the row as it is.
	appendOK(t, s, l, recs("b"), store.Update{})
	r2 := get(t, s, "r1")
	if r2.Turn != 3 || r2.MaxTurns != 12 || r2.Agent != "coder" || string(r2.Result) != `{"ok":true}` ||
		r2.Reason != "why" || r2.Usage != usage || r2.State != store.Running || r2.Owner != "o" || r2.LastSeq != 2 {
		t.Fatalf("row after empty update = %+v", r2)
	}
	if r2.UpdatedAt.Before(r.UpdatedAt) {
		t.Errorf("UpdatedAt went back: %v then %v", r.UpdatedAt, r2.UpdatedAt)
	}
	// Usage is replaced, not added; a zero Usage replaces too.
	usage2 := model.Usage{InputTokens: 1}
	appendOK(t, s, l, nil, store.Update{Usage: &usage2, Turn: 4})
	if r := get(t, s, "r1"); r.Usage != usage2 || r.Turn != 4 {
		t.Fatalf("Usage after replace = %+v, Turn %d", r.Usage, r.Turn)
	}
	appendOK(t, s, l, nil, store.Update{Usage: &model.Usage{}})
	if r := get(t, s, "r1"); r.Usage != (model.Usage{}) {
		t.Fatalf("Usage after zero replace = %+v", r.Usage)
	}
	// Completed with a result: released, final.
	appendOK(t, s, l, recs("done"), store.Update{State: store.Completed, Result: json.RawMessage(`"fin"`)})
	r = get(t, s, "r1")
	if r.State != store.Completed || string(r.Result) != `"fin"` || r.Owner != "" || r.LastSeq != 3 {
		t.Fatalf("row after completion = %+v", r)
	}
}

// testAppendClearReason: a paused run's reason goes away when an update
// clears it, and only then.
func testAppendClearReason(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := create(t, s, "r1", "o", long)
	appendOK(t, s, l, recs("p"), store.Update{State: store.Paused, Reason: "need approval"})
	if _, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgResume, Text: "ok"}); err != nil {
		t.Fatalf("Send resume: %v", err)
	}
	l, err := s.Claim(ctx, "r1", "o", long)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	// Without ClearReason, an empty Reason leaves the reason alone.
	appendOK(t, s, l, recs("a"), store.Update{State: store.Running, Turn: 2})
	if r := get(t, s, "r1"); r.Reason != "need approval" {
		t.Fatalf("Reason after an update without ClearReason = %q, want it kept", r.Reason)
	}
	appendOK(t, s, l, recs("resumed"), store.Update{State: store.Running, ClearReason: true})
	if r := get(t, s, "r1"); r.Reason != "" || r.State != store.Running || r.Turn != 2 {
		t.Fatalf("after ClearReason: Reason %q State %s Turn %d, want no reason, running, turn 2", r.Reason, r.State, r.Turn)
	}
	// A Reason given with ClearReason wins.
	appendOK(t, s, l, recs("b"), store.Update{Reason: "new", ClearReason: true})
	if r := get(t, s, "r1"); r.Reason != "new" {
		t.Fatalf("Reason with both Reason and ClearReason = %q, want %q", r.Reason, "new")
	}
	// A completion that clears: the finished run shows no reason.
	appendOK(t, s, l, recs("end"), store.Update{State: store.Completed, Result: json.RawMessage(`1`), ClearReason: true})
	if r := get(t, s, "r1"); r.Reason != "" || r.State != store.Completed || r.Owner != "" {
		t.Fatalf("after completion with ClearReason: %+v", r)
	}
}

func testAppendConflict(t *testing.T, s store.Store) {
	l := create(t, s, "r1", "o", long, recs("a", "b")...)
	before := get(t, s, "r1")

	_, err := s.Append(t.Context(), l, recs("c", "a"), store.Update{Turn: 5, State: store.Completed})
	wantErr(t, "Append with a key already in the journal", err, store.ErrConflict)
	_, err = s.Append(t.Context(), l, recs("c", "d", "c"), store.Update{Turn: 5, State: store.Paused})
	wantErr(t, "Append with a key repeated in the batch", err, store.ErrConflict)
	_, err = s.Append(t.Context(), l, recs("b"), store.Update{Turn: 5, Release: true})
	wantErr(t, "Append of one existing key", err, store.ErrConflict)

	// Nothing was written: neither records nor the update.
	checkJournal(t, s, "r1", "a", "b")
	after := get(t, s, "r1")
	if after.Turn != before.Turn || after.State != store.Running || after.Owner != "o" || after.Epoch != 1 {
		t.Fatalf("row changed by failed appends: %+v", after)
	}
	// The lease still works, and "c" is still free.
	if seq := appendOK(t, s, l, recs("c"), store.Update{}); seq != 3 {
		t.Errorf("Append after conflicts returned %d, want 3", seq)
	}
	// The empty key is a key like any other.
	appendOK(t, s, l, []store.Record{{Key: "", Type: "x", Time: t0}}, store.Update{})
	_, err = s.Append(t.Context(), l, []store.Record{{Key: "", Type: "x", Time: t0}}, store.Update{})
	wantErr(t, "Append of a second empty key", err, store.ErrConflict)
}

func testAppendLeaseLost(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := create(t, s, "r1", "o1", long, rec("a"))
	for _, bad := range []store.Lease{
		{RunID: "r1", Owner: "o1", Epoch: 2},
		{RunID: "r1", Owner: "o1", Epoch: 0},
		{RunID: "r1", Owner: "o2", Epoch: 1},
		{RunID: "r1", Owner: "", Epoch: 1},
	} {
		_, err := s.Append(ctx, bad, recs("x"), store.Update{Turn: 9})
		wantErr(t, fmt.Sprintf("Append with lease %+v", bad), err, store.ErrLeaseLost)
	}
	checkJournal(t, s, "r1", "a")

	// Same owner reclaims: the old epoch is stale.
	l2, err := s.Claim(ctx, "r1", "o1", long)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	_, err = s.Append(ctx, l, recs("x"), store.Update{})
	wantErr(t, "Append with the epoch before a reclaim", err, store.ErrLeaseLost)
	appendOK(t, s, l2, recs("b"), store.Update{})

	// Released: the lease is gone.
	if err := s.Release(ctx, l2); err != nil {
		t.Fatalf("Release: %v", err)
	}
	_, err = s.Append(ctx, l2, recs("x"), store.Update{})
	wantErr(t, "Append after Release", err, store.ErrLeaseLost)
	// An unowned run has no lease, not even an empty owner's.
	_, err = s.Append(ctx, store.Lease{RunID: "r1", Owner: "", Epoch: l2.Epoch}, recs("x"), store.Update{})
	wantErr(t, "Append with an empty owner to an unowned run", err, store.ErrLeaseLost)
	err = s.Release(ctx, store.Lease{RunID: "r1", Owner: "", Epoch: l2.Epoch})
	wantErr(t, "Release with an empty owner of an unowned run", err, store.ErrLeaseLost)
	checkJournal(t, s, "r1", "a", "b")
	if r := get(t, s, "r1"); r.Turn != 0 {
		t.Errorf("failed appends changed Turn to %d", r.Turn)
	}
}

func testAppendReleases(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, st := range []store.State{store.Paused, store.Completed, store.Failed, store.Stopped} {
		id := fmt.Sprintf("r%d", i)
		l := create(t, s, id, "o", long)
		appendOK(t, s, l, recs("end"), store.Update{State: st, Reason: "because"})
		r := get(t, s, id)
		if r.State != st || r.Owner != "" || r.Reason != "because" || r.Epoch != 1 {
			t.Errorf("after Append(State %s): State %q Owner %q Reason %q Epoch %d", st, r.State, r.Owner, r.Reason, r.Epoch)
		}
		_, err := s.Append(ctx, l, recs("more"), store.Update{})
		wantErr(t, fmt.Sprintf("Append after State %s", st), err, store.ErrLeaseLost)
		_, err = s.Claim(ctx, id, "o", long)
		wantErr(t, fmt.Sprintf("Claim after State %s", st), err, store.ErrInvalidState)
		checkJournal(t, s, id, "end")
	}

	// Release: true hands the run back while it stays Running.
	l := create(t, s, "rel", "o", long)
	appendOK(t, s, l, recs("a"), store.Update{Release: true, Turn: 2})
	r := get(t, s, "rel")
	if r.State != store.Running || r.Owner != "" || r.Turn != 2 {
		t.Fatalf("after Release update: %+v", r)
	}
	_, err := s.Append(ctx, l, recs("b"), store.Update{})
	wantErr(t, "Append after Release update", err, store.ErrLeaseLost)
	l2, err := s.Claim(ctx, "rel", "other", long)
	if err != nil {
		t.Fatalf("Claim after Release update: %v", err)
	}
	if l2.Epoch != 2 || l2.Owner != "other" {
		t.Fatalf("Claim after Release update = %+v", l2)
	}
}

func testAppendAckInbox(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := create(t, s, "r1", "o", long)
	other := create(t, s, "r2", "o", long)
	var sent []store.Message
	for i := range 3 {
		m, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgStop, Text: fmt.Sprint(i)})
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		sent = append(sent, m)
	}
	m2, err := s.Send(ctx, "r2", store.Message{Kind: store.MsgStop})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	// A failed append acknowledges nothing.
	_, err = s.Append(ctx, store.Lease{RunID: "r1", Owner: "x", Epoch: 1}, nil, store.Update{AckInbox: sent[2].ID})
	wantErr(t, "Append with a wrong lease", err, store.ErrLeaseLost)
	if in := inbox(t, s, "r1"); len(in) != 3 {
		t.Fatalf("failed append acknowledged messages: inbox %v", in)
	}

	appendOK(t, s, l, recs("a"), store.Update{AckInbox: sent[1].ID})
	in := inbox(t, s, "r1")
	if len(in) != 1 || in[0].ID != sent[2].ID || in[0].Text != "2" {
		t.Fatalf("inbox after AckInbox(%d) = %+v, want only message %d", sent[1].ID, in, sent[2].ID)
	}
	// Acknowledging r1's messages does not touch r2's.
	appendOK(t, s, l, nil, store.Update{AckInbox: m2.ID + 1000})
	if in := inbox(t, s, "r1"); len(in) != 0 {
		t.Fatalf("inbox after acknowledging all = %+v", in)
	}
	if in := inbox(t, s, "r2"); len(in) != 1 || in[0].ID != m2.ID {
		t.Fatalf("r2 inbox = %+v, want its message", in)
	}
	appendOK(t, s, other, nil, store.Update{AckInbox: m2.ID})
	if in := inbox(t, s, "r2"); len(in) != 0 {
		t.Fatalf("r2 inbox after ack = %+v", in)
	}
	// New messages get new IDs, above the acknowledged ones.
	m, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgStop})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if m.ID <= m2.ID || m.ID <= sent[2].ID {
		t.Fatalf("message ID %d reused an acknowledged ID", m.ID)
	}
}

func inbox(t *testing.T, s store.Store, id string) []store.Message {
	t.Helper()
	in, err := s.Inbox(t.Context(), id)
	if err != nil {
		t.Fatalf("Inbox(%q): %v", id, err)
	}
	return in
}

func testNoAliasing(t *testing.T, s store.Store) {
	ctx := t.Context()
	in := recs("a", "b")
	l, err := s.Create(ctx, store.Run{ID: "r1", Swarm: "sw"}, "o", long, in)
	if err != nil {
		t.Fatal(err)
	}
	in[0].Data[2] = 'X'
	in[1].Key = "changed"
	more := recs("c")
	result := json.RawMessage(`{"r":1}`)
	appendOK(t, s, l, more, store.Update{Result: result})
	more[0].Data[2] = 'X'
	result[2] = 'X'
	checkJournal(t, s, "r1", "a", "b", "c")
	if r := get(t, s, "r1"); string(r.Result) != `{"r":1}` {
		t.Fatalf("Result aliased the caller's slice: %s", r.Result)
	}

	out := read(t, s, "r1")
	out[0].Data[2] = 'X'
	out[0].Data = append(out[0].Data, "garbage"...)
	_ = append(out[:1], store.Record{Key: "zzz"})
	checkJournal(t, s, "r1", "a", "b", "c")
	r := get(t, s, "r1")
	r.Result[2] = 'X'
	if r := get(t, s, "r1"); string(r.Result) != `{"r":1}` {
		t.Fatalf("Result returned by Get aliases the store: %s", r.Result)
	}
	list, err := s.List(ctx, store.Filter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
	list[0].Result[2] = 'X'
	if r := get(t, s, "r1"); string(r.Result) != `{"r":1}` {
		t.Fatalf("Result returned by List aliases the store: %s", r.Result)
	}
}

func testClaim(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := create(t, s, "r1", "o1", long)
	if err := s.Release(ctx, l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// Unowned Running run.
	before := time.Now()
	l2, err := s.Claim(ctx, "r1", "o2", long)
	if err != nil {
		t.Fatalf("Claim of an unowned run: %v", err)
	}
	if want := (store.Lease{RunID: "r1", Owner: "o2", Epoch: 2}); l2 != want {
		t.Fatalf("Claim = %+v, want %+v", l2, want)
	}
	r := get(t, s, "r1")
	if r.Owner != "o2" || r.Epoch != 2 || !r.LeaseUntil.After(before.Add(long/2)) {
		t.Fatalf("row after Claim: Owner %q Epoch %d LeaseUntil %v", r.Owner, r.Epoch, r.LeaseUntil)
	}
	// Live lease, same owner: reclaim bumps the epoch.
	l3, err := s.Claim(ctx, "r1", "o2", long)
	if err != nil {
		t.Fatalf("reclaim by the owner: %v", err)
	}
	if l3.Epoch != 3 || l3.Owner != "o2" {
		t.Fatalf("reclaim = %+v, want epoch 3", l3)
	}
	_, err = s.Append(ctx, l2, recs("x"), store.Update{})
	wantErr(t, "Append with the pre-reclaim lease", err, store.ErrLeaseLost)
	appendOK(t, s, l3, recs("y"), store.Update{})
	// Live lease, other owner.
	_, err = s.Claim(ctx, "r1", "o1", long)
	wantErr(t, "Claim of a live lease", err, store.ErrLeased)
	if r := get(t, s, "r1"); r.Owner != "o2" || r.Epoch != 3 {
		t.Fatalf("failed Claim changed the row: Owner %q Epoch %d", r.Owner, r.Epoch)
	}
}

func testClaimExpiredLease(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := create(t, s, "r1", "o1", short, rec("a"))
	time.Sleep(pastShort)
	// Expiry alone does not take the lease away.
	appendOK(t, s, l, recs("b"), store.Update{})
	l2, err := s.Claim(ctx, "r1", "o2", long)
	if err != nil {
		t.Fatalf("Claim of an expired lease: %v", err)
	}
	if l2.Epoch != 2 || l2.Owner != "o2" || l2.From != "o1" || l2.FromUntil.IsZero() || l2.FromUntil.After(time.Now()) {
		t.Fatalf("Claim = %+v; want epoch 2, taken from o1 whose lease ran out", l2)
	}
	_, err = s.Append(ctx, l, recs("c"), store.Update{})
	wantErr(t, "Append by the expired owner after a claim", err, store.ErrLeaseLost)
	_, err = s.Claim(ctx, "r1", "o1", long)
	wantErr(t, "Claim back from the new live owner", err, store.ErrLeased)
	appendOK(t, s, l2, recs("c"), store.Update{})
	checkJournal(t, s, "r1", "a", "b", "c")
}

func testClaimErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.Claim(ctx, "nope", "o", long)
	wantErr(t, "Claim unknown run", err, store.ErrNotFound)
	for i, st := range []store.State{store.Paused, store.Completed, store.Failed, store.Stopped} {
		id := fmt.Sprintf("r%d", i)
		l := create(t, s, id, "o", short)
		appendOK(t, s, l, nil, store.Update{State: st})
		_, err := s.Claim(ctx, id, "o", long)
		wantErr(t, "Claim of a "+string(st)+" run", err, store.ErrInvalidState)
		_, err = s.Claim(ctx, id, "other", long)
		wantErr(t, "Claim of a "+string(st)+" run", err, store.ErrInvalidState)
	}
	time.Sleep(pastShort)
	// Expired leases do not make finished runs claimable.
	ls, err := s.ClaimExpired(ctx, "o", long, 10)
	if err != nil || len(ls) != 0 {
		t.Fatalf("ClaimExpired over paused and finished runs = %v, %v", ls, err)
	}
}

func testClaimExpired(t *testing.T, s store.Store) {
	ctx := t.Context()
	create(t, s, "r1", "o1", short) // expires
	create(t, s, "r2", "o2", long)  // live
	l3 := create(t, s, "r3", "o3", long)
	if err := s.Release(ctx, l3); err != nil { // unowned
		t.Fatal(err)
	}
	l4 := create(t, s, "r4", "o4", short)
	appendOK(t, s, l4, nil, store.Update{State: store.Paused}) // paused
	l5 := create(t, s, "r5", "o5", short)
	appendOK(t, s, l5, nil, store.Update{State: store.Completed}) // finished
	create(t, s, "r6", "o6", short)                               // expires
	create(t, s, "r7", "c", short)                                // expires, the claimer's own
	time.Sleep(pastShort)

	ls, err := s.ClaimExpired(ctx, "c", long, 100)
	if err != nil {
		t.Fatalf("ClaimExpired: %v", err)
	}
	// A claim names the owner whose lease it took over (r1, r6), not a
	// run that was unowned (r3) or the claimer's own (r7).
	want := []store.Lease{
		{RunID: "r1", Owner: "c", Epoch: 2, From: "o1"},
		{RunID: "r3", Owner: "c", Epoch: 2},
		{RunID: "r6", Owner: "c", Epoch: 2, From: "o6"},
		{RunID: "r7", Owner: "c", Epoch: 2},
	}
	got := slices.Clone(ls)
	for i, l := range got {
		if (l.From == "") != l.FromUntil.IsZero() || l.FromUntil.After(time.Now()) {
			t.Errorf("ClaimExpired: %s taken from %q whose lease ran out at %v", l.RunID, l.From, l.FromUntil)
		}
		got[i].FromUntil = time.Time{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ClaimExpired = %+v, want %+v", got, want)
	}
	for _, l := range ls {
		appendOK(t, s, l, recs("claimed"), store.Update{})
	}
	if r := get(t, s, "r2"); r.Owner != "o2" || r.Epoch != 1 {
		t.Errorf("live run r2 changed: Owner %q Epoch %d", r.Owner, r.Epoch)
	}
	for _, id := range []string{"r4", "r5"} {
		if r := get(t, s, id); r.Owner != "" || r.Epoch != 1 {
			t.Errorf("run %s changed: Owner %q Epoch %d", id, r.Owner, r.Epoch)
		}
	}
	// Everything claimable is now live.
	ls, err = s.ClaimExpired(ctx, "d", long, 100)
	if err != nil || len(ls) != 0 {
		t.Fatalf("second ClaimExpired = %+v, %v; want none", ls, err)
	}
}

func testClaimExpiredLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i := range 5 {
		create(t, s, fmt.Sprintf("r%d", i), "o", short)
	}
	time.Sleep(pastShort)
	var got []string
	for _, n := range []int{2, 2, 2} {
		ls, err := s.ClaimExpired(ctx, "c", long, n)
		if err != nil {
			t.Fatalf("ClaimExpired: %v", err)
		}
		if len(ls) > n {
			t.Fatalf("ClaimExpired(limit %d) returned %d leases", n, len(ls))
		}
		for _, l := range ls {
			got = append(got, l.RunID)
		}
	}
	if want := []string{"r0", "r1", "r2", "r3", "r4"}; !slices.Equal(got, want) {
		t.Fatalf("ClaimExpired in batches of 2 claimed %q, want %q", got, want)
	}
}

// testClaimExpiredOrder: with more runs claimable than the limit, the ones
// waiting longest are claimed (unowned runs, then by lease expiry), and
// the leases come oldest run first.
func testClaimExpiredOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	create(t, s, "r1", "o", 2*short) // expires last
	create(t, s, "r2", "o", short)   // expires first
	l3 := create(t, s, "r3", "o", long)
	if err := s.Release(ctx, l3); err != nil { // unowned
		t.Fatal(err)
	}
	time.Sleep(short + pastShort)
	var got [][]string
	for range 2 {
		ls, err := s.ClaimExpired(ctx, "c", long, 2)
		if err != nil {
			t.Fatalf("ClaimExpired: %v", err)
		}
		var ids []string
		for _, l := range ls {
			ids = append(ids, l.RunID)
		}
		got = append(got, ids)
	}
	if want := [][]string{{"r2", "r3"}, {"r1"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("ClaimExpired twice with limit 2 claimed %q, want %q", got, want)
	}
}

func testRenew(t *testing.T, s store.Store) {
	ctx := t.Context()
	create(t, s, "a1", "A", short)
	create(t, s, "a2", "A", short)
	la3 := create(t, s, "a3", "A", short)
	appendOK(t, s, la3, nil, store.Update{State: store.Paused}) // released
	create(t, s, "a4", "A", short)                              // will be taken by B
	create(t, s, "b1", "B", short)
	if _, err := s.Send(ctx, "a2", store.Message{Kind: store.MsgStop}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, "b1", store.Message{Kind: store.MsgStop}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pastShort)
	if _, err := s.Claim(ctx, "a4", "B", long); err != nil {
		t.Fatal(err)
	}
	b1 := get(t, s, "b1")

	rn, err := s.Renew(ctx, "A", long)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	held := slices.Sorted(slices.Values(rn.Held))
	pending := slices.Sorted(slices.Values(rn.Pending))
	if !slices.Equal(held, []string{"a1", "a2"}) || !slices.Equal(pending, []string{"a2"}) {
		t.Fatalf("Renew = Held %q Pending %q, want Held [a1 a2] Pending [a2]", rn.Held, rn.Pending)
	}
	// The renewed leases are live again: nobody else can claim them.
	for _, id := range []string{"a1", "a2"} {
		_, err := s.Claim(ctx, id, "C", long)
		wantErr(t, "Claim of a renewed run", err, store.ErrLeased)
		if r := get(t, s, id); r.Owner != "A" || r.Epoch != 1 {
			t.Errorf("Renew changed %s: Owner %q Epoch %d", id, r.Owner, r.Epoch)
		}
	}
	// B's runs were not renewed: b1 is still expired.
	if r := get(t, s, "b1"); !r.LeaseUntil.Equal(b1.LeaseUntil) {
		t.Errorf("Renew(A) changed b1's lease from %v to %v", b1.LeaseUntil, r.LeaseUntil)
	}
	if _, err := s.Claim(ctx, "b1", "C", long); err != nil {
		t.Errorf("Claim of B's expired run after Renew(A): %v", err)
	}
	// An owner with no runs.
	rn, err = s.Renew(ctx, "nobody", long)
	if err != nil || len(rn.Held) != 0 || len(rn.Pending) != 0 {
		t.Fatalf("Renew(nobody) = %+v, %v", rn, err)
	}
}

func testRelease(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := create(t, s, "r1", "o1", long, rec("a"))
	if err := s.Release(ctx, store.Lease{RunID: "r1", Owner: "o1", Epoch: 7}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("Release with a wrong epoch: %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx, store.Lease{RunID: "r1", Owner: "o2", Epoch: 1}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("Release by another owner: %v, want ErrLeaseLost", err)
	}
	if r := get(t, s, "r1"); r.Owner != "o1" {
		t.Fatalf("failed Release changed Owner to %q", r.Owner)
	}
	if err := s.Release(ctx, l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	r := get(t, s, "r1")
	if r.Owner != "" || r.State != store.Running || r.Epoch != 1 || r.LastSeq != 1 {
		t.Fatalf("row after Release = %+v", r)
	}
	err := s.Release(ctx, l)
	wantErr(t, "second Release", err, store.ErrLeaseLost)
	// Claimable at once by anyone.
	l2, err := s.Claim(ctx, "r1", "o2", long)
	if err != nil {
		t.Fatalf("Claim after Release: %v", err)
	}
	if l2.Epoch != 2 {
		t.Fatalf("Claim after Release = %+v, want epoch 2", l2)
	}
	// The old lease cannot release the new one.
	err = s.Release(ctx, l)
	wantErr(t, "Release of a stale lease", err, store.ErrLeaseLost)
	if r := get(t, s, "r1"); r.Owner != "o2" || r.Epoch != 2 {
		t.Fatalf("stale Release changed the row: Owner %q Epoch %d", r.Owner, r.Epoch)
	}
	// A paused run has no lease to release.
	l3 := create(t, s, "r2", "o1", long)
	appendOK(t, s, l3, nil, store.Update{State: store.Paused})
	err = s.Release(ctx, l3)
	wantErr(t, "Release of a paused run", err, store.ErrLeaseLost)
	if r := get(t, s, "r2"); r.State != store.Paused {
		t.Fatalf("Release changed a paused run's state to %q", r.State)
	}
	err = s.Release(ctx, store.Lease{RunID: "nope", Owner: "o", Epoch: 1})
	wantErr(t, "Release of an unknown run", err, store.ErrNotFound)
}

func testSendResume(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := create(t, s, "r1", "o1", long)
	_, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgResume, Text: "go"})
	wantErr(t, "resume of a running run", err, store.ErrInvalidState)
	if in := inbox(t, s, "r1"); len(in) != 0 {
		t.Fatalf("rejected message was stored: %+v", in)
	}
	appendOK(t, s, l, recs("p"), store.Update{State: store.Paused, Reason: "need input"})

	m, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgResume, Text: "go on"})
	if err != nil {
		t.Fatalf("resume of a paused run: %v", err)
	}
	if m.ID <= 0 || m.Kind != store.MsgResume || m.Text != "go on" || m.Time.IsZero() {
		t.Fatalf("Send returned %+v", m)
	}
	r := get(t, s, "r1")
	if r.State != store.Running || r.Owner != "" || r.Epoch != 1 {
		t.Fatalf("after resume: State %q Owner %q Epoch %d, want running, unowned, 1", r.State, r.Owner, r.Epoch)
	}
	in := inbox(t, s, "r1")
	if len(in) != 1 || in[0].ID != m.ID || in[0].Kind != store.MsgResume || in[0].Text != "go on" || !in[0].Time.Equal(m.Time) {
		t.Fatalf("Inbox = %+v, want [%+v]", in, m)
	}
	// The resumed run is runnable: anyone may claim it at once...
	ls, err := s.ClaimExpired(ctx, "o2", long, 10)
	if err != nil || len(ls) != 1 || ls[0] != (store.Lease{RunID: "r1", Owner: "o2", Epoch: 2}) {
		t.Fatalf("ClaimExpired after resume = %+v, %v", ls, err)
	}
	// ...and a second resume is refused while it runs.
	_, err = s.Send(ctx, "r1", store.Message{Kind: store.MsgResume})
	wantErr(t, "resume of a resumed run", err, store.ErrInvalidState)

	// Finished runs cannot be resumed.
	l2 := create(t, s, "r2", "o1", long)
	appendOK(t, s, l2, nil, store.Update{State: store.Failed})
	_, err = s.Send(ctx, "r2", store.Message{Kind: store.MsgResume})
	wantErr(t, "resume of a failed run", err, store.ErrInvalidState)
	if r := get(t, s, "r2"); r.State != store.Failed {
		t.Fatalf("refused resume changed state to %q", r.State)
	}
	_, err = s.Send(ctx, "nope", store.Message{Kind: store.MsgResume})
	wantErr(t, "resume of an unknown run", err, store.ErrNotFound)

	// A caller-supplied time is kept.
	l3 := create(t, s, "r3", "o1", long)
	appendOK(t, s, l3, nil, store.Update{State: store.Paused})
	m3, err := s.Send(ctx, "r3", store.Message{Kind: store.MsgResume, Time: t0})
	if err != nil {
		t.Fatal(err)
	}
	if !m3.Time.Equal(t0) {
		t.Fatalf("Send changed the message time to %v", m3.Time)
	}
	if in := inbox(t, s, "r3"); len(in) != 1 || !in[0].Time.Equal(t0) {
		t.Fatalf("Inbox = %+v, want time %v", in, t0)
	}
}

// testSendResumeAtPause: a resume that names a pause (Message.Pause) is
// delivered only while the run is paused with that LastSeq.
func testSendResumeAtPause(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := create(t, s, "r1", "o1", long)
	appendOK(t, s, l, recs("p1"), store.Update{State: store.Paused, Reason: "first"})
	first := get(t, s, "r1").LastSeq
	_, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgResume, Text: "stale", Pause: first + 1})
	wantErr(t, "resume at a pause that never was", err, store.ErrPauseNotCurrent)
	wantErr(t, "resume at a pause that never was", err, store.ErrInvalidState)
	if in := inbox(t, s, "r1"); len(in) != 0 {
		t.Fatalf("refused resume was stored: %+v", in)
	}
	if r := get(t, s, "r1"); r.State != store.Paused {
		t.Fatalf("refused resume changed state to %q", r.State)
	}
	if _, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgResume, Text: "yes", Pause: first}); err != nil {
		t.Fatalf("resume at the current pause: %v", err)
	}
	_, err = s.Send(ctx, "r1", store.Message{Kind: store.MsgResume, Text: "again", Pause: first})
	wantErr(t, "second answer to one pause", err, store.ErrPauseNotCurrent)
	// The run pauses again: an answer to the first pause stays refused.
	l2, err := s.Claim(ctx, "r1", "o1", long)
	if err != nil {
		t.Fatal(err)
	}
	appendOK(t, s, l2, recs("p2"), store.Update{State: store.Paused, Reason: "second", AckInbox: inbox(t, s, "r1")[0].ID})
	_, err = s.Send(ctx, "r1", store.Message{Kind: store.MsgResume, Text: "late", Pause: first})
	wantErr(t, "late answer to an earlier pause", err, store.ErrPauseNotCurrent)
	if r := get(t, s, "r1"); r.State != store.Paused || len(inbox(t, s, "r1")) != 0 {
		t.Fatalf("late answer applied: %+v", r)
	}
}

func testSendStop(t *testing.T, s store.Store) {
	ctx := t.Context()
	// Running and owned: the message waits for the owner.
	l := create(t, s, "r1", "o1", long)
	m, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgStop, Text: "enough"})
	if err != nil {
		t.Fatalf("stop of a running run: %v", err)
	}
	if r := get(t, s, "r1"); r.State != store.Running || r.Owner != "o1" || r.Epoch != 1 {
		t.Fatalf("stop changed a running run: %+v", r)
	}
	appendOK(t, s, l, nil, store.Update{})
	if in := inbox(t, s, "r1"); len(in) != 1 || in[0].ID != m.ID {
		t.Fatalf("Inbox = %+v", in)
	}

	// Paused: made runnable so that someone processes the stop.
	l2 := create(t, s, "r2", "o1", long)
	appendOK(t, s, l2, nil, store.Update{State: store.Paused})
	if _, err := s.Send(ctx, "r2", store.Message{Kind: store.MsgStop}); err != nil {
		t.Fatalf("stop of a paused run: %v", err)
	}
	if r := get(t, s, "r2"); r.State != store.Running || r.Owner != "" {
		t.Fatalf("after stopping a paused run: State %q Owner %q", r.State, r.Owner)
	}
	if _, err := s.Claim(ctx, "r2", "o2", long); err != nil {
		t.Fatalf("Claim after stop: %v", err)
	}

	// Finished: refused.
	for i, st := range []store.State{store.Completed, store.Failed, store.Stopped} {
		id := fmt.Sprintf("f%d", i)
		l := create(t, s, id, "o1", long)
		appendOK(t, s, l, nil, store.Update{State: st})
		_, err := s.Send(ctx, id, store.Message{Kind: store.MsgStop})
		wantErr(t, "stop of a "+string(st)+" run", err, store.ErrInvalidState)
		if r := get(t, s, id); r.State != st {
			t.Fatalf("refused stop changed state to %q", r.State)
		}
		if in := inbox(t, s, id); len(in) != 0 {
			t.Fatalf("refused stop was stored: %+v", in)
		}
	}
	_, err = s.Send(ctx, "nope", store.Message{Kind: store.MsgStop})
	wantErr(t, "stop of an unknown run", err, store.ErrNotFound)
}

func testInbox(t *testing.T, s store.Store) {
	ctx := t.Context()
	create(t, s, "r1", "o", long)
	create(t, s, "r2", "o", long)
	if in := inbox(t, s, "r1"); len(in) != 0 {
		t.Fatalf("new run has inbox %+v", in)
	}
	var want []store.Message
	for i := range 5 {
		id := "r1"
		if i%2 == 1 {
			id = "r2"
		}
		m, err := s.Send(ctx, id, store.Message{Kind: store.MsgStop, Text: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) > 0 && id == "r1" && m.ID <= want[len(want)-1].ID {
			t.Fatalf("message IDs not increasing: %d after %d", m.ID, want[len(want)-1].ID)
		}
		if id == "r1" {
			want = append(want, m)
		}
	}
	in := inbox(t, s, "r1")
	if len(in) != len(want) {
		t.Fatalf("Inbox = %+v, want %+v", in, want)
	}
	for i := range in {
		if in[i].ID != want[i].ID || in[i].Kind != want[i].Kind || in[i].Text != want[i].Text || !in[i].Time.Equal(want[i].Time) {
			t.Fatalf("Inbox[%d] = %+v, want %+v", i, in[i], want[i])
		}
	}
	_, err := s.Inbox(ctx, "nope")
	wantErr(t, "Inbox of an unknown run", err, store.ErrNotFound)
}

func testConcurrentAppendSameRun(t *testing.T, s store.Store) {
	const workers, appends = 8, 25
	ctx := t.Context()
	l := create(t, s, "r1", "o", long)
	var (
		mu   sync.Mutex
		seqs = map[int64]bool{}
		wg   sync.WaitGroup
	)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range appends {
				rs := recs(fmt.Sprintf("w%d-%d-a", w, i), fmt.Sprintf("w%d-%d-b", w, i))
				seq, err := s.Append(ctx, l, rs, store.Update{Turn: i + 1})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				dup := seqs[seq]
				seqs[seq] = true
				mu.Unlock()
				if dup {
					errs <- fmt.Errorf("two appends returned seq %d", seq)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const total = workers * appends * 2
	rs := read(t, s, "r1")
	if len(rs) != total {
		t.Fatalf("journal has %d records, want %d", len(rs), total)
	}
	keys := map[string]bool{}
	for i, r := range rs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has Seq %d", i, r.Seq)
		}
		if keys[r.Key] {
			t.Fatalf("key %q twice", r.Key)
		}
		keys[r.Key] = true
	}
	// Each append's two records are adjacent, and the returned seq is its
	// last one.
	for i := 0; i < len(rs); i += 2 {
		a, b := rs[i].Key, rs[i+1].Key
		if a[:len(a)-1] != b[:len(b)-1] || !seqs[rs[i+1].Seq] {
			t.Fatalf("records %d and %d (%q, %q) are not one append", i+1, i+2, a, b)
		}
	}
	if r := get(t, s, "r1"); r.LastSeq != total {
		t.Fatalf("LastSeq %d, want %d", r.LastSeq, total)
	}
}

func testConcurrentAppendManyRuns(t *testing.T, s store.Store) {
	const runs, appends = 16, 20
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, runs*2)
	for i := range runs {
		id := fmt.Sprintf("r%02d", i)
		wg.Go(func() {
			l, err := s.Create(ctx, newRun(id), "o", long, recs("start"))
			if err != nil {
				errs <- err
				return
			}
			var inner sync.WaitGroup
			for w := range 2 {
				inner.Go(func() {
					for j := range appends {
						if _, err := s.Append(ctx, l, recs(fmt.Sprintf("%d-%d", w, j)), store.Update{}); err != nil {
							errs <- fmt.Errorf("run %s: %w", id, err)
							return
						}
					}
				})
			}
			inner.Wait()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range runs {
		id := fmt.Sprintf("r%02d", i)
		rs := read(t, s, id)
		if len(rs) != 1+2*appends {
			t.Fatalf("run %s has %d records, want %d", id, len(rs), 1+2*appends)
		}
		keys := map[string]bool{}
		for j, r := range rs {
			if r.Seq != int64(j+1) || keys[r.Key] {
				t.Fatalf("run %s: record %d is Seq %d key %q", id, j, r.Seq, r.Key)
			}
			keys[r.Key] = true
		}
		if r := get(t, s, id); r.LastSeq != int64(len(rs)) {
			t.Fatalf("run %s: LastSeq %d, want %d", id, r.LastSeq, len(rs))
		}
	}
}

func testConcurrentCreate(t *testing.T, s store.Store) {
	const workers = 8
	ctx := t.Context()
	var ok, exists atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			_, err := s.Create(ctx, newRun("same"), fmt.Sprintf("o%d", w), long, recs(fmt.Sprintf("k%d", w)))
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrExists):
				exists.Add(1)
			default:
				t.Errorf("Create: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || exists.Load() != workers-1 {
		t.Fatalf("%d creates succeeded and %d got ErrExists, want 1 and %d", ok.Load(), exists.Load(), workers-1)
	}
	r := get(t, s, "same")
	rs := read(t, s, "same")
	if len(rs) != 1 || "o"+rs[0].Key[1:] != r.Owner {
		t.Fatalf("journal %+v does not belong to the winner %q", rs, r.Owner)
	}
}

func testConcurrentClaim(t *testing.T, s store.Store) {
	const runs, claimers = 10, 6
	ctx := t.Context()
	for i := range runs {
		create(t, s, fmt.Sprintf("r%d", i), "dead", short)
	}
	time.Sleep(pastShort)
	for i := range runs {
		id := fmt.Sprintf("r%d", i)
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []store.Lease
		)
		for c := range claimers {
			wg.Go(func() {
				l, err := s.Claim(ctx, id, fmt.Sprintf("c%d", c), long)
				switch {
				case err == nil:
					mu.Lock()
					winners = append(winners, l)
					mu.Unlock()
				case errors.Is(err, store.ErrLeased):
				default:
					t.Errorf("Claim(%s): %v", id, err)
				}
			})
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("run %s: %d claimers won (%+v), want 1", id, len(winners), winners)
		}
		w := winners[0]
		if w.Epoch != 2 {
			t.Fatalf("run %s: winner has epoch %d, want 2", id, w.Epoch)
		}
		if r := get(t, s, id); r.Owner != w.Owner || r.Epoch != 2 {
			t.Fatalf("run %s: row says Owner %q Epoch %d, winner %+v", id, r.Owner, r.Epoch, w)
		}
		appendOK(t, s, w, recs("won"), store.Update{})
		_, err := s.Append(ctx, store.Lease{RunID: id, Owner: "dead", Epoch: 1}, recs("late"), store.Update{})
		wantErr(t, "Append by the dead owner", err, store.ErrLeaseLost)
	}
}

func testConcurrentClaimExpired(t *testing.T, s store.Store) {
	const runs, claimers = 40, 4
	ctx := t.Context()
	for i := range runs {
		create(t, s, fmt.Sprintf("r%02d", i), "dead", short)
	}
	time.Sleep(pastShort)
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got = map[string]store.Lease{}
	)
	for c := range claimers {
		wg.Go(func() {
			owner := fmt.Sprintf("c%d", c)
			for {
				ls, err := s.ClaimExpired(ctx, owner, long, 3)
				if err != nil {
					t.Errorf("ClaimExpired: %v", err)
					return
				}
				if len(ls) == 0 {
					return
				}
				mu.Lock()
				for _, l := range ls {
					if prev, dup := got[l.RunID]; dup {
						t.Errorf("run %s claimed twice: %+v and %+v", l.RunID, prev, l)
					}
					got[l.RunID] = l
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != runs {
		t.Fatalf("claimed %d runs, want %d", len(got), runs)
	}
	for id, l := range got {
		if l.Epoch != 2 {
			t.Errorf("run %s claimed at epoch %d, want 2", id, l.Epoch)
		}
		if r := get(t, s, id); r.Owner != l.Owner || r.Epoch != l.Epoch {
			t.Errorf("run %s: row Owner %q Epoch %d, lease %+v", id, r.Owner, r.Epoch, l)
		}
	}
}

func testStaleLeaseAfterClaim(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	old := create(t, s, "r1", "old", short, rec("start"))
	time.Sleep(pastShort)

	// The old owner keeps appending while a new owner claims the run. Every
	// append that starts after the claim returned must fail.
	var claimed atomic.Bool
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			after := claimed.Load()
			_, err := s.Append(ctx, old, recs(fmt.Sprintf("old-%d", i)), store.Update{})
			switch {
			case err == nil && after:
				done <- fmt.Errorf("append %d by the old owner succeeded after the claim", i)
				return
			case errors.Is(err, store.ErrLeaseLost):
				done <- nil
				return
			case err != nil:
				done <- err
				return
			}
		}
	}()
	time.Sleep(5 * time.Millisecond)
	nl, err := s.Claim(ctx, "r1", "new", long)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	claimed.Store(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	seq := appendOK(t, s, nl, recs("new-0"), store.Update{})
	rs := read(t, s, "r1")
	if int64(len(rs)) != seq || rs[len(rs)-1].Key != "new-0" {
		t.Fatalf("journal after takeover ends with %q at %d, Append returned %d", rs[len(rs)-1].Key, len(rs), seq)
	}
	for i, r := range rs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has Seq %d", i, r.Seq)
		}
	}
}

// testBadInput: invalid arguments are refused with an error and change
// nothing.
func testBadInput(t *testing.T, s store.Store) {
	ctx := t.Context()
	if _, err := s.Create(ctx, store.Run{}, "o", time.Hour, nil); err == nil {
		t.Error("Create with an empty id succeeded")
	}
	l, err := s.Create(ctx, store.Run{ID: "r"}, "o", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, l, nil, store.Update{State: "bogus"}); err == nil {
		t.Error("Append with an invalid state succeeded")
	}
	if _, err := s.Send(ctx, "r", store.Message{Kind: "bogus"}); err == nil {
		t.Error("Send of an unknown kind succeeded")
	}
	if _, err := s.Claim(ctx, "r", "", time.Hour); err == nil {
		t.Error("Claim with an empty owner succeeded")
	}
}

func spend(t *testing.T, s store.Store, id string, d store.Pool) store.Pool {
	t.Helper()
	p, err := s.Spend(t.Context(), id, d)
	if err != nil {
		t.Fatalf("Spend(%q, %+v): %v", id, d, err)
	}
	return p
}

func testSpend(t *testing.T, s store.Store) {
	l := create(t, s, "root", "o", long, rec("a"))
	create(t, s, "other", "o", long)
	if p := spend(t, s, "root", store.Pool{}); p != (store.Pool{}) {
		t.Fatalf("pool of a new run = %+v, want zero", p)
	}
	before := get(t, s, "root")
	if p := spend(t, s, "root", store.Pool{Calls: 1}); p != (store.Pool{Calls: 1}) {
		t.Fatalf("after one call: %+v", p)
	}
	if p := spend(t, s, "root", store.Pool{Tokens: 120, Cost: 0.25}); p != (store.Pool{Calls: 1, Tokens: 120, Cost: 0.25}) {
		t.Fatalf("after usage: %+v", p)
	}
	if p := spend(t, s, "root", store.Pool{Calls: 2, Tokens: 30, Cost: 0.5}); p != (store.Pool{Calls: 3, Tokens: 150, Cost: 0.75}) {
		t.Fatalf("after more: %+v", p)
	}
	if p := spend(t, s, "root", store.Pool{Tools: 7}); p != (store.Pool{Calls: 3, Tools: 7, Tokens: 150, Cost: 0.75}) {
		t.Fatalf("after tool calls: %+v", p)
	}
	// A lift stays, and the totals keep counting.
	if p := spend(t, s, "root", store.Pool{Lifted: true}); p != (store.Pool{Calls: 3, Tools: 7, Tokens: 150, Cost: 0.75, Lifted: true}) {
		t.Fatalf("after lift: %+v", p)
	}
	if p := spend(t, s, "root", store.Pool{Calls: 1, Tools: 2}); p != (store.Pool{Calls: 4, Tools: 9, Tokens: 150, Cost: 0.75, Lifted: true}) {
		t.Fatalf("after a call past the lift: %+v", p)
	}
	// Reserved calls given back, never below zero.
	if p := spend(t, s, "root", store.Pool{Calls: -1, Tools: -3}); p != (store.Pool{Calls: 3, Tools: 6, Tokens: 150, Cost: 0.75, Lifted: true}) {
		t.Fatalf("after giving calls back: %+v", p)
	}
	if p := spend(t, s, "root", store.Pool{Calls: -1}); p != (store.Pool{Calls: 2, Tools: 6, Tokens: 150, Cost: 0.75, Lifted: true}) {
		t.Fatalf("after giving calls back: %+v", p)
	}
	if p := spend(t, s, "root", store.Pool{Calls: 1, Tools: -99}); p != (store.Pool{Calls: 3, Tools: 0, Tokens: 150, Cost: 0.75, Lifted: true}) {
		t.Fatalf("after giving back more tool calls than reserved: %+v", p)
	}
	if p := spend(t, s, "other", store.Pool{}); p != (store.Pool{}) {
		t.Fatalf("another run's pool = %+v, want zero", p)
	}
	// Nothing else changed: the row, its lease and its journal.
	after := get(t, s, "root")
	if after.State != before.State || after.Owner != before.Owner || after.Epoch != before.Epoch ||
		after.LastSeq != before.LastSeq || after.Usage != before.Usage || after.Turn != before.Turn {
		t.Fatalf("row changed by Spend: %+v, was %+v", after, before)
	}
	checkJournal(t, s, "root", "a")
	appendOK(t, s, l, recs("b"), store.Update{})
	// In every state, without a lease.
	appendOK(t, s, l, recs("end"), store.Update{State: store.Completed})
	if p := spend(t, s, "root", store.Pool{Tokens: 1}); p.Tokens != 151 || !p.Lifted {
		t.Fatalf("spend on a finished run: %+v", p)
	}
}

func testSpendErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.Spend(ctx, "nope", store.Pool{Calls: 1})
	wantErr(t, "Spend on an unknown run", err, store.ErrNotFound)
	create(t, s, "r", "o", long)
	spend(t, s, "r", store.Pool{Calls: 1, Tokens: 5, Cost: 0.5})
	for _, d := range []store.Pool{
		{Tokens: -5},
		{Cost: -0.5},
		{Cost: math.NaN()},
		{Cost: math.Inf(1)},
		{Calls: 1, Tokens: -1},
		{Calls: -1, Cost: -1},
	} {
		if _, err := s.Spend(ctx, "r", d); err == nil {
			t.Errorf("Spend(%+v) succeeded", d)
		}
	}
	if p := spend(t, s, "r", store.Pool{}); p != (store.Pool{Calls: 1, Tokens: 5, Cost: 0.5}) {
		t.Fatalf("pool after refused spends = %+v", p)
	}
}

// testConcurrentSpend: concurrent reservations of one call each get
// distinct totals, 1..n, and no addition is lost.
func testConcurrentSpend(t *testing.T, s store.Store) {
	create(t, s, "root", "o", long)
	const n = 40
	got := make([]int64, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			p, err := s.Spend(t.Context(), "root", store.Pool{Calls: 1, Tools: 2, Tokens: 3, Cost: 0.125})
			if err != nil {
				errs <- err
				return
			}
			got[i] = p.Calls
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Spend: %v", err)
	}
	slices.Sort(got)
	for i, c := range got {
		if c != int64(i+1) {
			t.Fatalf("reserved totals %v, want 1..%d each once", got, n)
		}
	}
	if p := spend(t, s, "root", store.Pool{}); p != (store.Pool{Calls: n, Tools: 2 * n, Tokens: 3 * n, Cost: 0.125 * n}) {
		t.Fatalf("pool after %d spends = %+v", n, p)
	}
}
