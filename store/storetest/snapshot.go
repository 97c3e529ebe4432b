package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/swarmrt/swarm/store"
)

var snapshotTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"Snapshot", testSnapshot},
	{"SnapshotErrors", testSnapshotErrors},
	{"SnapshotConcurrent", testSnapshotConcurrent},
}

// snapshots returns s as store.Snapshots, skipping t if it is not one.
func snapshots(t testing.TB, s store.Store) store.Snapshots {
	t.Helper()
	ss, ok := s.(store.Snapshots)
	if !ok {
		t.Skipf("%T does not implement store.Snapshots: snapshot cases skipped", s)
	}
	return ss
}

func snap(seq int64, data string) store.Snapshot {
	return store.Snapshot{Seq: seq, Data: []byte(data), Time: t0}
}

func wantSnapshot(t *testing.T, ss store.Snapshots, id string, want store.Snapshot) {
	t.Helper()
	got, err := ss.Snapshot(t.Context(), id)
	if err != nil {
		t.Fatalf("Snapshot(%s): %v", id, err)
	}
	if got.Seq != want.Seq || !bytes.Equal(got.Data, want.Data) || !got.Time.Equal(want.Time) {
		t.Fatalf("Snapshot(%s) = seq %d %s at %v; want seq %d %s at %v", id, got.Seq, got.Data, got.Time, want.Seq, want.Data, want.Time)
	}
}

// testSnapshot: a run has no snapshot until one is put; a newer one
// replaces it, an older or equal one is ignored; the journal is untouched;
// runs do not see each other's.
func testSnapshot(t *testing.T, s store.Store) {
	ss := snapshots(t, s)
	ctx := t.Context()
	l := create(t, s, "r1", "o", long, recs("a", "b", "c")...)
	create(t, s, "r2", "o", long, recs("x")...)
	if _, err := ss.Snapshot(ctx, "r1"); !errors.Is(err, store.ErrNoSnapshot) {
		t.Fatalf("Snapshot of a run without one: %v, want ErrNoSnapshot", err)
	}
	put := func(id string, sn store.Snapshot) {
		t.Helper()
		if err := ss.PutSnapshot(ctx, id, sn); err != nil {
			t.Fatalf("PutSnapshot(%s, %d): %v", id, sn.Seq, err)
		}
	}
	put("r1", snap(2, `{"upto":2}`))
	wantSnapshot(t, ss, "r1", snap(2, `{"upto":2}`))
	put("r1", snap(3, `{"upto":3}`))
	wantSnapshot(t, ss, "r1", snap(3, `{"upto":3}`))
	put("r1", snap(1, `{"old":1}`))
	put("r1", snap(3, `{"same":3}`))
	wantSnapshot(t, ss, "r1", snap(3, `{"upto":3}`))
	if _, err := ss.Snapshot(ctx, "r2"); !errors.Is(err, store.ErrNoSnapshot) {
		t.Fatalf("another run's snapshot leaked: %v", err)
	}
	checkJournal(t, s, "r1", "a", "b", "c")
	appendOK(t, s, l, recs("d"), store.Update{})
	put("r1", snap(4, `{"upto":4}`))
	wantSnapshot(t, ss, "r1", snap(4, `{"upto":4}`))
	// The data is the store's copy.
	sn := snap(4, `{"upto":4}`)
	got, _ := ss.Snapshot(ctx, "r1")
	got.Data[0] = 'X'
	wantSnapshot(t, ss, "r1", sn)
}

// testSnapshotErrors: an unknown run, a record the journal does not have
// and data over the limit are refused, and nothing is kept.
func testSnapshotErrors(t *testing.T, s store.Store) {
	ss := snapshots(t, s)
	ctx := t.Context()
	create(t, s, "r1", "o", long, recs("a", "b")...)
	if err := ss.PutSnapshot(ctx, "nope", snap(1, `{}`)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutSnapshot of an unknown run: %v, want ErrNotFound", err)
	}
	if _, err := ss.Snapshot(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Snapshot of an unknown run: %v, want ErrNotFound", err)
	}
	for _, seq := range []int64{0, -1, 3} {
		if err := ss.PutSnapshot(ctx, "r1", snap(seq, `{}`)); !errors.Is(err, store.ErrInvalidState) {
			t.Errorf("PutSnapshot at record %d of 2: %v, want ErrInvalidState", seq, err)
		}
	}
	big := store.Snapshot{Seq: 1, Data: bytes.Repeat([]byte("x"), store.MaxSnapshotBytes+1), Time: t0}
	if err := ss.PutSnapshot(ctx, "r1", big); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("PutSnapshot over the limit: %v, want ErrTooLarge", err)
	}
	if _, err := ss.Snapshot(ctx, "r1"); !errors.Is(err, store.ErrNoSnapshot) {
		t.Fatalf("a refused snapshot was kept: %v", err)
	}
}

// testSnapshotConcurrent: snapshots put at once by many writers leave the
// newest.
func testSnapshotConcurrent(t *testing.T, s store.Store) {
	ss := snapshots(t, s)
	const n = 20
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	create(t, s, "r1", "o", long, recs(keys...)...)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			if err := ss.PutSnapshot(context.Background(), "r1", snap(int64(i), fmt.Sprintf(`{"n":%d}`, i))); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantSnapshot(t, ss, "r1", snap(n, fmt.Sprintf(`{"n":%d}`, n)))
}
