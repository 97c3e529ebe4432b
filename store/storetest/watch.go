package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

// watchWait bounds the wait for one notification. It only keeps a broken
// store from hanging the suite; no test asserts how fast notifications are.
const watchWait = 10 * time.Second

// watcher subscribes to s's changes, skipping t if s is no store.Watcher.
func watcher(t *testing.T, ctx context.Context, s store.Store) <-chan store.Change {
	t.Helper()
	w, ok := s.(store.Watcher)
	if !ok {
		t.Skip("the store does not implement store.Watcher")
	}
	ch := make(chan store.Change, 1000)
	err := w.Watch(ctx, func(c store.Change) {
		select {
		case ch <- c:
		default:
			t.Errorf("watcher: channel full, dropped %+v", c)
		}
	})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	return ch
}

// expect reads changes until it has seen every one of want (repeats of a
// wanted change are allowed), failing on any other change. Changes of runs
// named in ignore are skipped.
func expect(t *testing.T, ch <-chan store.Change, what string, want ...store.Change) {
	t.Helper()
	left := slices.Clone(want)
	timeout := time.NewTimer(watchWait)
	defer timeout.Stop()
	for len(left) > 0 {
		select {
		case c := <-ch:
			if i := slices.Index(left, c); i >= 0 {
				left = slices.Delete(left, i, i+1)
				continue
			}
			if slices.Contains(want, c) {
				continue // repeated
			}
			if c.RunID == "" {
				continue // "something may have changed" after a reconnect
			}
			t.Fatalf("%s: unexpected change %+v (still waiting for %+v)", what, c, left)
		case <-timeout.C:
			t.Fatalf("%s: no notification of %+v", what, left)
		}
	}
}

func change(id string, k store.ChangeKind) store.Change { return store.Change{RunID: id, Kind: k} }

func testWatch(t *testing.T, s store.Store) {
	ctx := t.Context()
	ch := watcher(t, ctx, s)
	const (
		appended = store.ChangeAppended
		inbox    = store.ChangeInbox
		runnable = store.ChangeRunnable
	)

	l := create(t, s, "r1", "o1", long, rec("a"))
	expect(t, ch, "Create", change("r1", appended))
	appendOK(t, s, l, recs("b"), store.Update{Turn: 1})
	expect(t, ch, "Append", change("r1", appended))
	appendOK(t, s, l, nil, store.Update{Reason: "x"})
	expect(t, ch, "Append without records", change("r1", appended))

	// Failures announce nothing: the next change seen is the marker's.
	_, err := s.Append(ctx, store.Lease{RunID: "r1", Owner: "o2", Epoch: 1}, recs("c"), store.Update{})
	wantErr(t, "Append with a wrong lease", err, store.ErrLeaseLost)
	_, err = s.Append(ctx, l, recs("a"), store.Update{})
	wantErr(t, "Append of a recorded key", err, store.ErrConflict)
	_, err = s.Create(ctx, newRun("r1"), "o1", long, nil)
	wantErr(t, "second Create", err, store.ErrExists)
	err = s.Release(ctx, store.Lease{RunID: "r1", Owner: "o1", Epoch: 9})
	wantErr(t, "Release of a stale lease", err, store.ErrLeaseLost)
	_, err = s.Send(ctx, "r1", store.Message{Kind: store.MsgResume})
	wantErr(t, "resume of a running run", err, store.ErrInvalidState)
	create(t, s, "marker", "o1", long)
	expect(t, ch, "failed writes, then a Create", change("marker", appended))

	// A stop for a running run: its owner should look at the inbox.
	if _, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgStop}); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, "stop of a running run", change("r1", inbox))

	// Handing the run back makes it runnable.
	appendOK(t, s, l, recs("c"), store.Update{Release: true})
	expect(t, ch, "Append with Release", change("r1", appended), change("r1", runnable))
	l2, err := s.Claim(ctx, "r1", "o2", long)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l2); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, "Release", change("r1", runnable))

	// Pausing is an append; a resume wakes the run.
	l3, err := s.Claim(ctx, "r1", "o3", long)
	if err != nil {
		t.Fatal(err)
	}
	appendOK(t, s, l3, recs("p"), store.Update{State: store.Paused, AckInbox: 1 << 40})
	expect(t, ch, "pause", change("r1", appended))
	if _, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgResume, Text: "go"}); err != nil {
		t.Fatal(err)
	}
	expect(t, ch, "resume of a paused run", change("r1", inbox), change("r1", runnable))

	// A run created without an owner is runnable at once.
	create(t, s, "free", "", long)
	expect(t, ch, "Create without owner", change("free", appended), change("free", runnable))

	// Finishing is an append; it does not make the run runnable.
	l4, err := s.Claim(ctx, "r1", "o4", long)
	if err != nil {
		t.Fatal(err)
	}
	appendOK(t, s, l4, recs("end"), store.Update{State: store.Completed, AckInbox: 1 << 40})
	create(t, s, "marker2", "o1", long)
	expect(t, ch, "completion", change("r1", appended), change("marker2", appended))
}

func testWatchCancel(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	gone := watcher(t, ctx, s)
	stays := watcher(t, t.Context(), s)
	create(t, s, "r1", "o", long)
	expect(t, gone, "first watcher", change("r1", store.ChangeAppended))
	expect(t, stays, "second watcher", change("r1", store.ChangeAppended))

	cancel()
	create(t, s, "r2", "o", long)
	expect(t, stays, "second watcher after the first was cancelled", change("r2", store.ChangeAppended))
	// The cancelled watcher may have been notified while being cancelled,
	// but not of anything later than that.
	create(t, s, "r3", "o", long)
	expect(t, stays, "second watcher", change("r3", store.ChangeAppended))
	for len(gone) > 0 {
		if c := <-gone; c.RunID == "r3" {
			t.Fatalf("cancelled watcher notified of %+v", c)
		}
	}

	// A closed store refuses new watchers and stops calling old ones.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	err := s.(store.Watcher).Watch(t.Context(), func(store.Change) {})
	if err == nil {
		t.Fatal("Watch on a closed store succeeded")
	}
}
