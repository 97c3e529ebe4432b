package storetest

import (
	"testing"

	"github.com/swarmrt/swarm/store"
)

// testCreateReserving checks store.Reserver, for stores that implement it:
// the new run's pool is what it reserved, as a Spend right after Create
// would leave it, its row and journal are Create's, and a run that exists
// or an amount Spend refuses changes nothing.
func testCreateReserving(t *testing.T, s store.Store) {
	rs, ok := s.(store.Reserver)
	if !ok {
		t.Skip("the store does not implement store.Reserver")
	}
	ctx := t.Context()
	d := store.Pool{Calls: 15, Tools: 32}
	l, p, err := rs.CreateReserving(ctx, newRun("root"), "o", long, recs("start"), d)
	if err != nil {
		t.Fatalf("CreateReserving: %v", err)
	}
	if p != d || l != (store.Lease{RunID: "root", Owner: "o", Epoch: 1}) {
		t.Fatalf("CreateReserving returned %+v and pool %+v, want the lease at epoch 1 and pool %+v", l, p, d)
	}
	if got := spend(t, s, "root", store.Pool{}); got != d {
		t.Fatalf("pool after CreateReserving = %+v, want %+v", got, d)
	}
	r := get(t, s, "root")
	if r.State != store.Running || r.Owner != "o" || r.Epoch != 1 || r.LastSeq != 1 {
		t.Fatalf("row after CreateReserving: %+v", r)
	}
	checkJournal(t, s, "root", "start")
	appendOK(t, s, l, recs("a"), store.Update{})

	// An existing run keeps its pool.
	_, _, err = rs.CreateReserving(ctx, newRun("root"), "o2", long, recs("other"), store.Pool{Calls: 5})
	wantErr(t, "CreateReserving of an existing run", err, store.ErrExists)
	if got := spend(t, s, "root", store.Pool{}); got != d {
		t.Fatalf("pool after a refused CreateReserving = %+v, want %+v", got, d)
	}
	checkJournal(t, s, "root", "start", "a")

	// An amount Spend refuses creates nothing; a zero one is Create.
	if _, _, err := rs.CreateReserving(ctx, newRun("bad"), "o", long, recs("start"), store.Pool{Tokens: -1}); err == nil {
		t.Fatal("CreateReserving with negative tokens succeeded")
	}
	if _, err := s.Get(ctx, "bad"); err == nil {
		t.Fatal("a refused CreateReserving created its run")
	}
	if _, p, err := rs.CreateReserving(ctx, newRun("plain"), "o", long, nil, store.Pool{}); err != nil || p != (store.Pool{}) {
		t.Fatalf("CreateReserving with nothing to reserve: pool %+v, %v", p, err)
	}
}
