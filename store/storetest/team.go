package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

// teamTests are the cases of store.Teams; a store without teams skips
// them.
var teamTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"TaskAdd", testTaskAdd},
	{"TaskAddKey", testTaskAddKey},
	{"TaskAddBadInput", testTaskAddBadInput},
	{"TaskClaim", testTaskClaim},
	{"TaskClaimFinishedOwner", testTaskClaimFinishedOwner},
	{"TaskComplete", testTaskComplete},
	{"TaskUnblock", testTaskUnblock},
	{"TaskRelease", testTaskRelease},
	{"TaskClaimRace", testTaskClaimRace},
	{"TaskClaimRaceEight", testTaskClaimRaceEight},
	{"TaskAddConcurrent", testTaskAddConcurrent},
	{"Request", testRequest},
	{"RequestBadInput", testRequestBadInput},
	{"RequestExpiry", testRequestExpiry},
	{"RequestResolveRace", testRequestResolveRace},
}

// teams returns s as store.Teams, skipping t if it is not one.
func teams(t testing.TB, s store.Store) store.Teams {
	t.Helper()
	ts, ok := s.(store.Teams)
	if !ok {
		t.Skipf("%T does not implement store.Teams: team cases skipped", s)
	}
	return ts
}

func addTask(t testing.TB, ts store.Teams, team string, task store.Task) store.Task {
	t.Helper()
	got, err := ts.AddTask(t.Context(), team, task)
	if err != nil {
		t.Fatalf("AddTask(%q, %q): %v", team, task.Subject, err)
	}
	return got
}

func tasks(t testing.TB, ts store.Teams, team string) []store.Task {
	t.Helper()
	got, err := ts.Tasks(t.Context(), team)
	if err != nil {
		t.Fatalf("Tasks(%q): %v", team, err)
	}
	return got
}

func claimTask(t testing.TB, ts store.Teams, team string, id int64, member, run string) store.Task {
	t.Helper()
	got, err := ts.ClaimTask(t.Context(), team, id, member, run)
	if err != nil {
		t.Fatalf("ClaimTask(%q, %d, %q, %q): %v", team, id, member, run, err)
	}
	if got.ID != id || got.Status != store.TaskInProgress || got.Owner != member || got.OwnerRun != run {
		t.Fatalf("ClaimTask(%q, %d, %q, %q) = %+v", team, id, member, run, got)
	}
	return got
}

func sameTask(a, b store.Task) bool {
	return a.ID == b.ID && a.Key == b.Key && a.Subject == b.Subject && a.Description == b.Description &&
		a.Status == b.Status && a.Owner == b.Owner && a.OwnerRun == b.OwnerRun && slices.Equal(a.BlockedBy, b.BlockedBy) &&
		a.Result == b.Result && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

// wantTask checks that task id of team's board is want.
func wantTask(t *testing.T, ts store.Teams, team string, want store.Task) {
	t.Helper()
	all := tasks(t, ts, team)
	if want.ID < 1 || int(want.ID) > len(all) {
		t.Fatalf("board of %q has %d tasks, want task %d", team, len(all), want.ID)
	}
	if got := all[want.ID-1]; !sameTask(got, want) {
		t.Fatalf("task %d of %q is %+v, want %+v", want.ID, team, got, want)
	}
}

// wantBoard checks that team's board holds tasks with IDs 1..n of the
// given statuses.
func wantBoard(t *testing.T, ts store.Teams, team string, statuses ...store.TaskStatus) []store.Task {
	t.Helper()
	all := tasks(t, ts, team)
	var got []store.TaskStatus
	for i, task := range all {
		got = append(got, task.Status)
		if task.ID != int64(i+1) {
			t.Fatalf("board of %q: task %d has ID %d", team, i+1, task.ID)
		}
	}
	if !slices.Equal(got, statuses) {
		t.Fatalf("board of %q: statuses %v, want %v", team, got, statuses)
	}
	return all
}

func wantErrText(t *testing.T, what string, err, target error, texts ...string) {
	t.Helper()
	wantErr(t, what, err, target)
	for _, s := range texts {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%s: error %q does not say %q", what, err, s)
		}
	}
}

func testTaskAdd(t *testing.T, s store.Store) {
	ts := teams(t, s)
	if got := tasks(t, ts, "lead"); got == nil || len(got) != 0 {
		t.Fatalf("Tasks of an unknown team = %#v, want an empty list", got)
	}
	in := store.Task{ID: 99, Subject: "write the parser ☃", Description: "in Go", Status: store.TaskCompleted,
		Owner: "mallory", OwnerRun: "r9", Result: "done", CreatedAt: t0, UpdatedAt: t0}
	t1 := addTask(t, ts, "lead", in)
	if t1.ID != 1 || t1.Subject != in.Subject || t1.Description != in.Description || t1.Status != store.TaskPending ||
		t1.Owner != "" || t1.OwnerRun != "" || t1.Result != "" || t1.BlockedBy != nil ||
		t1.CreatedAt.IsZero() || t1.CreatedAt.Equal(t0) || !t1.UpdatedAt.Equal(t1.CreatedAt) {
		t.Fatalf("AddTask returned %+v: want ID 1, pending, unowned, with the store's times", t1)
	}
	t2 := addTask(t, ts, "lead", store.Task{Subject: "test it", BlockedBy: []int64{1, 1}})
	t3 := addTask(t, ts, "lead", store.Task{Subject: "ship it", BlockedBy: []int64{2, 1, 2}})
	if t2.ID != 2 || !slices.Equal(t2.BlockedBy, []int64{1}) || t3.ID != 3 || !slices.Equal(t3.BlockedBy, []int64{1, 2}) {
		t.Fatalf("AddTask returned %+v and %+v: want IDs 2 and 3, blockers [1] and [1 2]", t2, t3)
	}
	all := wantBoard(t, ts, "lead", store.TaskPending, store.TaskPending, store.TaskPending)
	for i, want := range []store.Task{t1, t2, t3} {
		if !sameTask(all[i], want) {
			t.Fatalf("Tasks[%d] = %+v, want %+v", i, all[i], want)
		}
	}
	// Another team's board is numbered on its own and sees none of these.
	if o := addTask(t, ts, "other", store.Task{Subject: "elsewhere"}); o.ID != 1 {
		t.Fatalf("first task of another team has ID %d, want 1", o.ID)
	}
	if _, err := ts.AddTask(t.Context(), "other", store.Task{Subject: "x", BlockedBy: []int64{2}}); err == nil {
		t.Fatal("a task of another team blocked by a task of this one was added")
	}
	wantBoard(t, ts, "other", store.TaskPending)
	wantBoard(t, ts, "lead", store.TaskPending, store.TaskPending, store.TaskPending)
	// Returned slices are copies.
	all[1].BlockedBy[0] = 42
	wantTask(t, ts, "lead", t2)
}

// testTaskAddKey: AddTask is idempotent by Key; an empty Key does not
// deduplicate.
func testTaskAddKey(t *testing.T, s store.Store) {
	ts := teams(t, s)
	first := addTask(t, ts, "lead", store.Task{Key: "k1", Subject: "first"})
	again := addTask(t, ts, "lead", store.Task{Key: "k1", Subject: "second", Description: "other"})
	if !sameTask(again, first) {
		t.Fatalf("AddTask of a stored Key returned %+v, want the stored %+v", again, first)
	}
	// Even once it changed, and with blockers it would not accept.
	claimTask(t, ts, "lead", 1, "alice", "ra")
	if again, err := ts.AddTask(t.Context(), "lead", store.Task{Key: "k1", Subject: "third", BlockedBy: []int64{7}}); err != nil ||
		again.ID != 1 || again.Status != store.TaskInProgress || again.Subject != "first" {
		t.Fatalf("AddTask of a stored Key after a claim = %+v, %v", again, err)
	}
	addTask(t, ts, "lead", store.Task{Subject: "same"})
	addTask(t, ts, "lead", store.Task{Subject: "same"})
	if k := addTask(t, ts, "lead", store.Task{Key: "k2", Subject: "first"}); k.ID != 4 {
		t.Fatalf("a new Key got ID %d, want 4", k.ID)
	}
	// Keys are per team.
	if o := addTask(t, ts, "other", store.Task{Key: "k1", Subject: "mine"}); o.ID != 1 || o.Subject != "mine" {
		t.Fatalf("Key of another team: %+v", o)
	}
	wantBoard(t, ts, "lead", store.TaskInProgress, store.TaskPending, store.TaskPending, store.TaskPending)
}

func testTaskAddBadInput(t *testing.T, s store.Store) {
	ts := teams(t, s)
	addTask(t, ts, "lead", store.Task{Subject: "one"})
	big := strings.Repeat("x", store.MaxMailBytes+1)
	for _, c := range []struct {
		what   string
		team   string
		task   store.Task
		target error
	}{
		{"an empty subject", "lead", store.Task{Description: "x"}, nil},
		{"an empty team", "", store.Task{Subject: "x"}, nil},
		{"an unknown blocker", "lead", store.Task{Subject: "x", BlockedBy: []int64{1, 2}}, store.ErrNotFound},
		{"blocked by itself", "lead", store.Task{Subject: "x", BlockedBy: []int64{2}}, store.ErrNotFound},
		{"blocker 0", "lead", store.Task{Subject: "x", BlockedBy: []int64{0}}, store.ErrNotFound},
		{"a negative blocker", "lead", store.Task{Subject: "x", BlockedBy: []int64{-1}}, store.ErrNotFound},
		{"a blocker of an unknown team", "nobody", store.Task{Subject: "x", BlockedBy: []int64{1}}, store.ErrNotFound},
		{"too many blockers", "lead", store.Task{Subject: "x", BlockedBy: slices.Repeat([]int64{1}, 1001)}, store.ErrTooLarge},
		{"an oversize subject", "lead", store.Task{Subject: big}, store.ErrTooLarge},
		{"an oversize description", "lead", store.Task{Subject: "x", Description: big}, store.ErrTooLarge},
		{"an oversize key", "lead", store.Task{Subject: "x", Key: strings.Repeat("k", 2<<10)}, store.ErrTooLarge},
		{"an oversize team", strings.Repeat("t", 2<<10), store.Task{Subject: "x"}, store.ErrTooLarge},
	} {
		got, err := ts.AddTask(t.Context(), c.team, c.task)
		if err == nil {
			t.Fatalf("AddTask with %s succeeded: %+v", c.what, got)
		}
		if c.target != nil {
			wantErr(t, "AddTask with "+c.what, err, c.target)
		}
	}
	wantBoard(t, ts, "lead", store.TaskPending)
	wantBoard(t, ts, "nobody")
	_, err := ts.AddTask(t.Context(), "lead", store.Task{Subject: "x", BlockedBy: []int64{1, 5, 9}})
	wantErrText(t, "AddTask with unknown blockers", err, store.ErrNotFound, "5, 9")
	// Exactly the limits are fine, and come back whole; nothing failed
	// used up an ID.
	limit := strings.Repeat("y", store.MaxMailBytes)
	got := addTask(t, ts, "lead", store.Task{Subject: limit, Description: limit, BlockedBy: slices.Repeat([]int64{1}, 1000)})
	if got.ID != 2 || len(tasks(t, ts, "lead")[1].Subject) != len(limit) {
		t.Fatalf("task at the limits: ID %d", got.ID)
	}
}

func testTaskClaim(t *testing.T, s store.Store) {
	ts := teams(t, s)
	ctx := t.Context()
	create(t, s, "ra", "o", long)
	create(t, s, "rb", "o", long)
	t1 := addTask(t, ts, "lead", store.Task{Subject: "one"})
	got := claimTask(t, ts, "lead", 1, "alice", "ra")
	if got.Subject != "one" || !got.CreatedAt.Equal(t1.CreatedAt) || got.UpdatedAt.Before(t1.UpdatedAt) {
		t.Fatalf("ClaimTask = %+v", got)
	}
	wantTask(t, ts, "lead", got)
	// A repeated claim by the owner's run returns the task unchanged.
	if again := claimTask(t, ts, "lead", 1, "alice", "ra"); !sameTask(again, got) {
		t.Fatalf("repeated ClaimTask = %+v, want %+v", again, got)
	}
	// Another run is refused, and told who owns the task.
	_, err := ts.ClaimTask(ctx, "lead", 1, "bob", "rb")
	wantErrText(t, "ClaimTask of a task another run owns", err, store.ErrConflict, "alice")
	// So is a run the store does not know, and the owner is not taken
	// for finished because of it.
	_, err = ts.ClaimTask(ctx, "lead", 1, "carol", "nope")
	wantErr(t, "ClaimTask by an unknown run", err, store.ErrConflict)
	wantTask(t, ts, "lead", got)
	// A task owned by a run the store does not know is not released.
	addTask(t, ts, "lead", store.Task{Subject: "two"})
	claimTask(t, ts, "lead", 2, "ghost", "ghost-run")
	_, err = ts.ClaimTask(ctx, "lead", 2, "bob", "rb")
	wantErrText(t, "ClaimTask of a task an unknown run owns", err, store.ErrConflict, "ghost")

	for _, c := range []struct {
		what string
		team string
		id   int64
	}{{"an unknown task", "lead", 3}, {"task 0", "lead", 0}, {"a task of an unknown team", "nobody", 1}} {
		_, err := ts.ClaimTask(ctx, c.team, c.id, "bob", "rb")
		wantErr(t, "ClaimTask of "+c.what, err, store.ErrNotFound)
	}
	addTask(t, ts, "lead", store.Task{Subject: "three"})
	for _, c := range [][2]string{{"", "rb"}, {"bob", ""}} {
		if _, err := ts.ClaimTask(ctx, "lead", 3, c[0], c[1]); err == nil {
			t.Fatalf("ClaimTask by member %q, run %q succeeded", c[0], c[1])
		}
	}
	wantBoard(t, ts, "lead", store.TaskInProgress, store.TaskInProgress, store.TaskPending)
	// Tasks of another team are another matter.
	addTask(t, ts, "other", store.Task{Subject: "theirs"})
	claimTask(t, ts, "other", 1, "bob", "rb")
}

// testTaskClaimFinishedOwner: a task whose owner run finished (in any of
// the three terminal states) may be claimed by another run; one whose
// owner is paused, or running with an expired lease, may not.
func testTaskClaimFinishedOwner(t *testing.T, s store.Store) {
	ts := teams(t, s)
	ctx := t.Context()
	create(t, s, "rb", "o", long)
	for i, st := range []store.State{store.Completed, store.Failed, store.Stopped} {
		id := int64(i + 1)
		run := fmt.Sprint("ra", i)
		l := create(t, s, run, "o", long)
		addTask(t, ts, "lead", store.Task{Subject: fmt.Sprint("task ", id)})
		claimTask(t, ts, "lead", id, "alice", run)
		_, err := ts.ClaimTask(ctx, "lead", id, "bob", "rb")
		wantErr(t, "ClaimTask of a task a running run owns", err, store.ErrConflict)
		appendOK(t, s, l, recs("end"), store.Update{State: st})
		got := claimTask(t, ts, "lead", id, "bob", "rb")
		wantTask(t, ts, "lead", got)
		// The finished run may not complete it now.
		_, err = ts.CompleteTask(ctx, "lead", id, run, "late")
		wantErr(t, "CompleteTask by the finished former owner", err, store.ErrConflict)
	}
	// Paused (idle), or its lease expired: the owner is still alive.
	lp := create(t, s, "paused", "o", long)
	addTask(t, ts, "lead", store.Task{Subject: "idle owner"})
	claimTask(t, ts, "lead", 4, "carol", "paused")
	appendOK(t, s, lp, recs("idle"), store.Update{State: store.Paused})
	create(t, s, "expiring", "o", short)
	addTask(t, ts, "lead", store.Task{Subject: "dead process"})
	claimTask(t, ts, "lead", 5, "dave", "expiring")
	time.Sleep(pastShort)
	for _, id := range []int64{4, 5} {
		_, err := ts.ClaimTask(ctx, "lead", id, "bob", "rb")
		wantErr(t, fmt.Sprint("ClaimTask of task ", id, " whose owner has not finished"), err, store.ErrConflict)
	}
	all := wantBoard(t, ts, "lead", slices.Repeat([]store.TaskStatus{store.TaskInProgress}, 5)...)
	if all[3].OwnerRun != "paused" || all[4].OwnerRun != "expiring" {
		t.Fatalf("owners changed: %+v", all[3:])
	}
}

func testTaskComplete(t *testing.T, s store.Store) {
	ts := teams(t, s)
	ctx := t.Context()
	addTask(t, ts, "lead", store.Task{Subject: "one"})
	_, err := ts.CompleteTask(ctx, "lead", 1, "ra", "x")
	wantErr(t, "CompleteTask of a task nobody owns", err, store.ErrInvalidState)
	claimTask(t, ts, "lead", 1, "alice", "ra")
	_, err = ts.CompleteTask(ctx, "lead", 1, "rb", "x")
	wantErrText(t, "CompleteTask by another run", err, store.ErrConflict, "alice")
	_, err = ts.CompleteTask(ctx, "lead", 1, "ra", strings.Repeat("r", store.MaxMailBytes+1))
	wantErr(t, "CompleteTask with an oversize result", err, store.ErrTooLarge)
	if _, err := ts.CompleteTask(ctx, "lead", 1, "", "x"); err == nil {
		t.Fatal("CompleteTask by an empty run succeeded")
	}
	wantBoard(t, ts, "lead", store.TaskInProgress)

	done, err := ts.CompleteTask(ctx, "lead", 1, "ra", "parser written")
	if err != nil || done.Status != store.TaskCompleted || done.Result != "parser written" || done.Owner != "alice" || done.OwnerRun != "ra" {
		t.Fatalf("CompleteTask = %+v, %v", done, err)
	}
	wantTask(t, ts, "lead", done)
	// Again by the owner: unchanged, whatever the result says.
	if again, err := ts.CompleteTask(ctx, "lead", 1, "ra", "other"); err != nil || !sameTask(again, done) {
		t.Fatalf("repeated CompleteTask = %+v, %v; want %+v", again, err, done)
	}
	_, err = ts.CompleteTask(ctx, "lead", 1, "rb", "mine")
	wantErr(t, "CompleteTask of a completed task by another run", err, store.ErrConflict)
	for _, run := range []string{"ra", "rb"} {
		_, err = ts.ClaimTask(ctx, "lead", 1, "bob", run)
		wantErr(t, "ClaimTask of a completed task by "+run, err, store.ErrInvalidState)
	}
	// ReleaseTasks leaves completed tasks alone.
	if n, err := ts.ReleaseTasks(ctx, "lead", "ra"); err != nil || n != 0 {
		t.Fatalf("ReleaseTasks after completion = %d, %v", n, err)
	}
	wantTask(t, ts, "lead", done)
	_, err = ts.CompleteTask(ctx, "lead", 2, "ra", "x")
	wantErr(t, "CompleteTask of an unknown task", err, store.ErrNotFound)
	_, err = ts.CompleteTask(ctx, "nobody", 1, "ra", "x")
	wantErr(t, "CompleteTask of a task of an unknown team", err, store.ErrNotFound)
}

// testTaskUnblock: a task is blocked until all its blockers are
// completed; the refusal names the blockers still open.
func testTaskUnblock(t *testing.T, s store.Store) {
	ts := teams(t, s)
	ctx := t.Context()
	addTask(t, ts, "lead", store.Task{Subject: "parse"})
	addTask(t, ts, "lead", store.Task{Subject: "lex"})
	addTask(t, ts, "lead", store.Task{Subject: "test", BlockedBy: []int64{2, 1}})
	addTask(t, ts, "lead", store.Task{Subject: "ship", BlockedBy: []int64{3}})
	_, err := ts.ClaimTask(ctx, "lead", 3, "bob", "rb")
	wantErrText(t, "ClaimTask of a blocked task", err, store.ErrInvalidState, "tasks 1, 2")
	claimTask(t, ts, "lead", 1, "alice", "ra")
	claimTask(t, ts, "lead", 2, "alice", "ra")
	if _, err := ts.CompleteTask(ctx, "lead", 1, "ra", "ok"); err != nil {
		t.Fatal(err)
	}
	_, err = ts.ClaimTask(ctx, "lead", 3, "bob", "rb")
	wantErrText(t, "ClaimTask of a task blocked by one task", err, store.ErrInvalidState, "task 2")
	if strings.Contains(err.Error(), "1") {
		t.Fatalf("error %q names the completed blocker", err)
	}
	_, err = ts.ClaimTask(ctx, "lead", 4, "bob", "rb")
	wantErrText(t, "ClaimTask of a task blocked by a blocked task", err, store.ErrInvalidState, "task 3")
	wantBoard(t, ts, "lead", store.TaskCompleted, store.TaskInProgress, store.TaskPending, store.TaskPending)
	// Released, a blocker still blocks.
	if n, err := ts.ReleaseTasks(ctx, "lead", "ra"); err != nil || n != 1 {
		t.Fatalf("ReleaseTasks = %d, %v", n, err)
	}
	_, err = ts.ClaimTask(ctx, "lead", 3, "bob", "rb")
	wantErr(t, "ClaimTask of a task blocked by a released task", err, store.ErrInvalidState)
	claimTask(t, ts, "lead", 2, "alice", "ra")
	if _, err := ts.CompleteTask(ctx, "lead", 2, "ra", "ok"); err != nil {
		t.Fatal(err)
	}
	claimTask(t, ts, "lead", 3, "bob", "rb")
	_, err = ts.ClaimTask(ctx, "lead", 4, "bob", "rb")
	wantErr(t, "ClaimTask of a task blocked by a task in progress", err, store.ErrInvalidState)
	if _, err := ts.CompleteTask(ctx, "lead", 3, "rb", "ok"); err != nil {
		t.Fatal(err)
	}
	claimTask(t, ts, "lead", 4, "bob", "rb")
}

func testTaskRelease(t *testing.T, s store.Store) {
	ts := teams(t, s)
	ctx := t.Context()
	for i := range 4 {
		addTask(t, ts, "lead", store.Task{Subject: fmt.Sprint("t", i)})
	}
	addTask(t, ts, "other", store.Task{Subject: "theirs"})
	claimTask(t, ts, "lead", 1, "alice", "ra")
	claimTask(t, ts, "lead", 2, "alice", "ra")
	claimTask(t, ts, "lead", 3, "alice", "ra")
	claimTask(t, ts, "lead", 4, "bob", "rb")
	claimTask(t, ts, "other", 1, "alice", "ra") // the same run in another team
	if _, err := ts.CompleteTask(ctx, "lead", 3, "ra", "ok"); err != nil {
		t.Fatal(err)
	}
	if n, err := ts.ReleaseTasks(ctx, "lead", "ra"); err != nil || n != 2 {
		t.Fatalf("ReleaseTasks = %d, %v; want 2", n, err)
	}
	all := wantBoard(t, ts, "lead", store.TaskPending, store.TaskPending, store.TaskCompleted, store.TaskInProgress)
	for _, task := range all[:2] {
		if task.Owner != "" || task.OwnerRun != "" {
			t.Fatalf("released task %+v still has an owner", task)
		}
	}
	if all[2].OwnerRun != "ra" || all[3].OwnerRun != "rb" {
		t.Fatalf("ReleaseTasks changed other tasks: %+v", all[2:])
	}
	wantBoard(t, ts, "other", store.TaskInProgress)
	if n, err := ts.ReleaseTasks(ctx, "lead", "ra"); err != nil || n != 0 {
		t.Fatalf("ReleaseTasks again = %d, %v; want 0", n, err)
	}
	if n, err := ts.ReleaseTasks(ctx, "nobody", "ra"); err != nil || n != 0 {
		t.Fatalf("ReleaseTasks of an unknown team = %d, %v; want 0", n, err)
	}
	// Released tasks may be claimed by anyone.
	claimTask(t, ts, "lead", 1, "bob", "rb")
}

func testTaskClaimRace(t *testing.T, s store.Store) {
	rounds := 1000
	if testing.Short() {
		rounds = 100
	}
	TaskClaimRace(t, []store.Store{s}, 2, rounds)
}

func testTaskClaimRaceEight(t *testing.T, s store.Store) {
	TaskClaimRace(t, []store.Store{s}, 8, 100)
}

func testTaskAddConcurrent(t *testing.T, s store.Store) {
	TaskAddConcurrency(t, []store.Store{s}, 8, 50)
}

// TaskClaimRace has claimers members (each with a run of its own, taking
// turns through the stores, which share their data) race to claim each of
// rounds new tasks, all at once: exactly one wins each, the others get
// store.ErrConflict naming the winner, and the board agrees.
func TaskClaimRace(t testing.TB, stores []store.Store, claimers, rounds int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	team := fmt.Sprintf("race-%d", time.Now().UnixNano())
	tss := make([]store.Teams, len(stores))
	for i, s := range stores {
		tss[i] = teams(t, s)
	}
	runs := make([]string, claimers)
	for i := range runs {
		runs[i] = fmt.Sprintf("%s-run%d", team, i)
		if _, err := stores[0].Create(ctx, newRun(runs[i]), "o", long, nil); err != nil {
			t.Fatal(err)
		}
	}
	wins := make([]int, claimers)
	for round := range rounds {
		task, err := tss[round%len(tss)].AddTask(ctx, team, store.Task{Subject: fmt.Sprint("task ", round)})
		if err != nil {
			t.Fatalf("round %d: AddTask: %v", round, err)
		}
		claimed := make([]store.Task, claimers)
		winner, errs := race(t, fmt.Sprintf("round %d: claim of task %d", round, task.ID), claimers, store.ErrConflict, func(i int) (err error) {
			claimed[i], err = tss[(round+i)%len(tss)].ClaimTask(ctx, team, task.ID, fmt.Sprint("member", i), runs[i])
			return err
		})
		wins[winner]++
		w := claimed[winner]
		if w.OwnerRun != runs[winner] || w.Owner != fmt.Sprint("member", winner) || w.Status != store.TaskInProgress {
			t.Fatalf("round %d: the winner got %+v", round, w)
		}
		for i, err := range errs {
			if i != winner && !strings.Contains(err.Error(), w.Owner) {
				t.Fatalf("round %d: loser's error %q does not name the owner %s", round, err, w.Owner)
			}
		}
	}
	all, err := tss[0].Tasks(ctx, team)
	if err != nil || len(all) != rounds {
		t.Fatalf("Tasks after the race: %d tasks, %v; want %d", len(all), err, rounds)
	}
	for i, task := range all {
		if task.Status != store.TaskInProgress || !slices.Contains(runs, task.OwnerRun) {
			t.Fatalf("task %d after the race: %+v", i+1, task)
		}
	}
	t.Logf("%d claimers, %d rounds: wins %v", claimers, rounds, wins)
}

// TaskAddConcurrency has adders goroutines (taking turns through the
// stores) add perAdder tasks each to one board at once, every third with a
// Key that every adder also uses: the board's IDs are 1..n, each once, in
// order, each keyed task is added once, and every AddTask of a Key
// returns the same task. It returns how long the adding took.
func TaskAddConcurrency(t testing.TB, stores []store.Store, adders, perAdder int) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	team := fmt.Sprintf("adds-%d", time.Now().UnixNano())
	type added struct {
		adder int
		key   string
		task  store.Task
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		out   []added
		errs  = make(chan error, adders)
		start = make(chan struct{})
	)
	begin := time.Now()
	for a := range adders {
		ts := teams(t, stores[a%len(stores)])
		wg.Go(func() {
			<-start
			for n := range perAdder {
				var key string
				if n%3 == 0 {
					key = fmt.Sprint("shared-", n)
				}
				task, err := ts.AddTask(ctx, team, store.Task{Key: key, Subject: fmt.Sprintf("adder %d task %d", a, n)})
				if err != nil {
					errs <- fmt.Errorf("adder %d, task %d: %w", a, n, err)
					cancel()
					return
				}
				mu.Lock()
				out = append(out, added{a, key, task})
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	elapsed := time.Since(begin)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, err := teams(t, stores[0]).Tasks(ctx, team)
	if err != nil {
		t.Fatal(err)
	}
	keyed := (perAdder + 2) / 3
	want := adders*(perAdder-keyed) + keyed
	if len(all) != want {
		t.Fatalf("%d tasks on the board, want %d", len(all), want)
	}
	byKey := map[string]store.Task{}
	for i, task := range all {
		if task.ID != int64(i+1) {
			t.Fatalf("Tasks[%d] has ID %d: IDs not dense and ordered", i, task.ID)
		}
		if task.Key != "" {
			if _, dup := byKey[task.Key]; dup {
				t.Fatalf("Key %q added twice", task.Key)
			}
			byKey[task.Key] = task
		}
	}
	seen := map[int64]bool{}
	for _, a := range out {
		if a.key != "" {
			if k := byKey[a.key]; !sameTask(k, a.task) {
				t.Fatalf("AddTask of Key %q returned %+v, the board has %+v", a.key, a.task, k)
			}
			continue
		}
		if seen[a.task.ID] || !sameTask(all[a.task.ID-1], a.task) {
			t.Fatalf("adder %d got task %+v; the board has %+v (or it was returned twice)", a.adder, a.task, all[a.task.ID-1])
		}
		seen[a.task.ID] = true
	}
	return elapsed
}

func sameRequest(a, b store.Request) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.From == b.From && a.To == b.To && a.Content == b.Content &&
		a.State == b.State && a.Response == b.Response && a.Deadline.Equal(b.Deadline) &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func addRequest(t *testing.T, ts store.Teams, team string, r store.Request) store.Request {
	t.Helper()
	got, err := ts.AddRequest(t.Context(), team, r)
	if err != nil {
		t.Fatalf("AddRequest(%q, %q): %v", team, r.ID, err)
	}
	return got
}

// wantRequests checks that team's requests are want, in order.
func wantRequests(t *testing.T, ts store.Teams, team string, want ...store.Request) []store.Request {
	t.Helper()
	got, err := ts.Requests(t.Context(), team)
	if err != nil {
		t.Fatalf("Requests(%q): %v", team, err)
	}
	if got == nil || len(got) != len(want) {
		t.Fatalf("Requests(%q) = %+v, want %d requests", team, got, len(want))
	}
	for i := range want {
		if !sameRequest(got[i], want[i]) {
			t.Fatalf("Requests(%q)[%d] = %+v, want %+v", team, i, got[i], want[i])
		}
	}
	return got
}

func testRequest(t *testing.T, s store.Store) {
	ts := teams(t, s)
	ctx := t.Context()
	wantRequests(t, ts, "lead")
	deadline := time.Now().Add(time.Hour).Round(time.Microsecond)
	in := store.Request{ID: "req1", Kind: "shutdown", From: "lead", To: "alice", Content: "wrap up ☃",
		State: store.RequestApproved, Response: "sure", Deadline: deadline, CreatedAt: t0, UpdatedAt: t0}
	r1 := addRequest(t, ts, "lead", in)
	if r1.ID != "req1" || r1.Kind != "shutdown" || r1.From != "lead" || r1.To != "alice" || r1.Content != in.Content ||
		r1.State != store.RequestPending || r1.Response != "" || !r1.Deadline.Equal(deadline) ||
		r1.CreatedAt.IsZero() || r1.CreatedAt.Equal(t0) || !r1.UpdatedAt.Equal(r1.CreatedAt) {
		t.Fatalf("AddRequest = %+v: want it pending, with the store's times", r1)
	}
	r2 := addRequest(t, ts, "lead", store.Request{ID: "req2", Kind: "plan_approval", From: "bob", To: "lead", Content: "plan"})
	r0 := addRequest(t, ts, "lead", store.Request{ID: "req0", Kind: "plan_approval", From: "carol", To: "lead"})
	if !r2.Deadline.IsZero() {
		t.Fatalf("a request without a deadline got %v", r2.Deadline)
	}
	// An ID the team has returns the stored request.
	if again := addRequest(t, ts, "lead", store.Request{ID: "req1", Kind: "other", From: "x", To: "y"}); !sameRequest(again, r1) {
		t.Fatalf("AddRequest of a stored ID = %+v, want %+v", again, r1)
	}
	wantRequests(t, ts, "lead", r1, r2, r0) // in order of creation, not of ID
	// Requests of another team are its own, even with the same ID.
	o := addRequest(t, ts, "other", store.Request{ID: "req1", Kind: "shutdown", From: "lead2", To: "dave"})
	wantRequests(t, ts, "other", o)

	ok, err := ts.ResolveRequest(ctx, "lead", "req1", store.RequestApproved, "bye")
	if err != nil || ok.State != store.RequestApproved || ok.Response != "bye" || ok.Content != in.Content ||
		!ok.CreatedAt.Equal(r1.CreatedAt) || ok.UpdatedAt.Before(r1.UpdatedAt) {
		t.Fatalf("ResolveRequest(approved) = %+v, %v", ok, err)
	}
	no, err := ts.ResolveRequest(ctx, "lead", "req2", store.RequestRejected, "add tests first")
	if err != nil || no.State != store.RequestRejected || no.Response != "add tests first" {
		t.Fatalf("ResolveRequest(rejected) = %+v, %v", no, err)
	}
	wantRequests(t, ts, "lead", ok, no, r0)
	wantRequests(t, ts, "other", o)
	// Resolved for good: again, either way, is refused with the request
	// as it is.
	for _, st := range []store.RequestState{store.RequestApproved, store.RequestRejected} {
		got, err := ts.ResolveRequest(ctx, "lead", "req1", st, "again")
		wantErr(t, "ResolveRequest of an approved request", err, store.ErrInvalidState)
		if !sameRequest(got, ok) {
			t.Fatalf("refused ResolveRequest returned %+v, want %+v", got, ok)
		}
	}
	if got, err := ts.ResolveRequest(ctx, "lead", "req2", store.RequestApproved, ""); !errors.Is(err, store.ErrInvalidState) || !sameRequest(got, no) {
		t.Fatalf("ResolveRequest of a rejected request = %+v, %v", got, err)
	}
	if again := addRequest(t, ts, "lead", store.Request{ID: "req1", Kind: "shutdown", From: "lead", To: "alice"}); !sameRequest(again, ok) {
		t.Fatalf("AddRequest of a resolved ID = %+v, want %+v", again, ok)
	}
	_, err = ts.ResolveRequest(ctx, "lead", "nope", store.RequestApproved, "")
	wantErr(t, "ResolveRequest of an unknown request", err, store.ErrNotFound)
	_, err = ts.ResolveRequest(ctx, "nobody", "req1", store.RequestApproved, "")
	wantErr(t, "ResolveRequest of a request of an unknown team", err, store.ErrNotFound)
	wantRequests(t, ts, "lead", ok, no, r0)
}

func testRequestBadInput(t *testing.T, s store.Store) {
	ts := teams(t, s)
	ctx := t.Context()
	good := store.Request{ID: "r", Kind: "shutdown", From: "lead", To: "alice"}
	with := func(f func(r *store.Request)) store.Request { r := good; f(&r); return r }
	huge := strings.Repeat("h", 2<<10)
	for _, c := range []struct {
		what   string
		team   string
		r      store.Request
		target error
	}{
		{"an empty team", "", good, nil},
		{"an empty id", "lead", with(func(r *store.Request) { r.ID = "" }), nil},
		{"an empty kind", "lead", with(func(r *store.Request) { r.Kind = "" }), nil},
		{"an empty sender", "lead", with(func(r *store.Request) { r.From = "" }), nil},
		{"an empty recipient", "lead", with(func(r *store.Request) { r.To = "" }), nil},
		{"an oversize content", "lead", with(func(r *store.Request) { r.Content = strings.Repeat("c", store.MaxMailBytes+1) }), store.ErrTooLarge},
		{"an oversize id", "lead", with(func(r *store.Request) { r.ID = huge }), store.ErrTooLarge},
		{"an oversize kind", "lead", with(func(r *store.Request) { r.Kind = huge }), store.ErrTooLarge},
		{"an oversize sender", "lead", with(func(r *store.Request) { r.From = huge }), store.ErrTooLarge},
		{"an oversize recipient", "lead", with(func(r *store.Request) { r.To = huge }), store.ErrTooLarge},
	} {
		got, err := ts.AddRequest(ctx, c.team, c.r)
		if err == nil {
			t.Fatalf("AddRequest with %s succeeded: %+v", c.what, got)
		}
		if c.target != nil {
			wantErr(t, "AddRequest with "+c.what, err, c.target)
		}
	}
	wantRequests(t, ts, "lead")
	r := addRequest(t, ts, "lead", with(func(r *store.Request) { r.Content = strings.Repeat("c", store.MaxMailBytes) }))
	for _, st := range []store.RequestState{store.RequestPending, store.RequestExpired, "", "maybe"} {
		if got, err := ts.ResolveRequest(ctx, "lead", "r", st, ""); err == nil {
			t.Fatalf("ResolveRequest to state %q succeeded: %+v", st, got)
		}
	}
	_, err := ts.ResolveRequest(ctx, "lead", "r", store.RequestRejected, strings.Repeat("x", store.MaxMailBytes+1))
	wantErr(t, "ResolveRequest with an oversize response", err, store.ErrTooLarge)
	wantRequests(t, ts, "lead", r)
}

// testRequestExpiry: a pending request past its deadline reads, and is
// stored, as expired, and can no longer be resolved.
func testRequestExpiry(t *testing.T, s store.Store) {
	ts := teams(t, s)
	ctx := t.Context()
	// A deadline already passed: expired at once.
	past := addRequest(t, ts, "lead", store.Request{ID: "past", Kind: "shutdown", From: "lead", To: "alice",
		Deadline: time.Now().Add(-time.Second)})
	if past.State != store.RequestExpired {
		t.Fatalf("AddRequest with a past deadline = %+v, want it expired", past)
	}
	got, err := ts.ResolveRequest(ctx, "lead", "past", store.RequestApproved, "too late")
	wantErr(t, "ResolveRequest of an expired request", err, store.ErrInvalidState)
	if got.State != store.RequestExpired || got.Response != "" {
		t.Fatalf("refused ResolveRequest returned %+v", got)
	}

	// Deadlines that pass after the request was added: one is found by
	// Requests, the other by ResolveRequest and AddRequest.
	short := time.Now().Add(pastShort)
	a := addRequest(t, ts, "lead", store.Request{ID: "a", Kind: "plan_approval", From: "bob", To: "lead", Deadline: short})
	b := addRequest(t, ts, "lead", store.Request{ID: "b", Kind: "plan_approval", From: "bob", To: "lead", Deadline: short})
	c := addRequest(t, ts, "lead", store.Request{ID: "c", Kind: "plan_approval", From: "bob", To: "lead", Deadline: short})
	never := addRequest(t, ts, "lead", store.Request{ID: "never", Kind: "shutdown", From: "lead", To: "bob"})
	later := addRequest(t, ts, "lead", store.Request{ID: "later", Kind: "shutdown", From: "lead", To: "carol",
		Deadline: time.Now().Add(time.Hour)})
	for _, r := range []store.Request{a, b, c} {
		if r.State != store.RequestPending {
			t.Skipf("request %q expired before AddRequest returned: the machine is too slow for this case", r.ID)
		}
	}
	time.Sleep(time.Until(short) + 10*time.Millisecond)

	b2, err := ts.ResolveRequest(ctx, "lead", "b", store.RequestApproved, "ok")
	wantErr(t, "ResolveRequest past the deadline", err, store.ErrInvalidState)
	if b2.State != store.RequestExpired || b2.Response != "" || !b2.CreatedAt.Equal(b.CreatedAt) {
		t.Fatalf("ResolveRequest past the deadline returned %+v, want it expired", b2)
	}
	c2 := addRequest(t, ts, "lead", store.Request{ID: "c", Kind: "x", From: "x", To: "x"})
	if c2.State != store.RequestExpired {
		t.Fatalf("AddRequest of an ID past its deadline returned %+v, want it expired", c2)
	}
	all, err := ts.Requests(ctx, "lead")
	if err != nil || len(all) != 6 {
		t.Fatalf("Requests = %+v, %v", all, err)
	}
	a2 := all[1]
	if a2.ID != "a" || a2.State != store.RequestExpired || a2.UpdatedAt.Before(a.UpdatedAt) {
		t.Fatalf("Requests returned %+v, want it expired", a2)
	}
	if !sameRequest(all[2], b2) || !sameRequest(all[3], c2) || !sameRequest(all[4], never) || !sameRequest(all[5], later) {
		t.Fatalf("Requests = %+v", all)
	}
	// Stored as expired: read again, it is the same, time included; and
	// it cannot be resolved.
	wantRequests(t, ts, "lead", all...)
	for _, id := range []string{"a", "c"} {
		_, err = ts.ResolveRequest(ctx, "lead", id, store.RequestRejected, "no")
		wantErr(t, "ResolveRequest of expired request "+id, err, store.ErrInvalidState)
	}
	wantRequests(t, ts, "lead", all...)
	// The others resolve as usual.
	if _, err := ts.ResolveRequest(ctx, "lead", "later", store.RequestApproved, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.ResolveRequest(ctx, "lead", "never", store.RequestRejected, ""); err != nil {
		t.Fatal(err)
	}
}

// testRequestResolveRace: of concurrent resolutions of one request,
// exactly one wins; the others see it resolved.
func testRequestResolveRace(t *testing.T, s store.Store) {
	ts := teams(t, s)
	ctx := t.Context()
	const racers = 8
	for round := range 20 {
		id := fmt.Sprint("req", round)
		addRequest(t, ts, "lead", store.Request{ID: id, Kind: "plan_approval", From: "bob", To: "lead"})
		got := make([]store.Request, racers)
		winner, _ := race(t, fmt.Sprintf("round %d: resolution of %s", round, id), racers, store.ErrInvalidState, func(i int) (err error) {
			st := store.RequestApproved
			if i%2 == 1 {
				st = store.RequestRejected
			}
			got[i], err = ts.ResolveRequest(ctx, "lead", id, st, fmt.Sprint("racer", i))
			return err
		})
		for i := range racers {
			if got[i].State != got[winner].State || got[i].Response != fmt.Sprint("racer", winner) {
				t.Fatalf("round %d: racer %d saw %+v; the winner was racer %d", round, i, got[i], winner)
			}
		}
	}
}

// race runs try(0), ..., try(n-1) at once and returns which one succeeded
// and every one's error. It fails t unless exactly one succeeded and all
// the others failed with loss.
func race(t testing.TB, what string, n int, loss error, try func(i int) error) (int, []error) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = try(i)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("%s: both %d and %d won", what, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, loss):
			t.Fatalf("%s: contender %d: %v, want %v", what, i, err, loss)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: nobody won: %v", what, errs)
	}
	return winner, errs
}
