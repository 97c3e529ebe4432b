package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

var blobTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"BlobPutGet", testBlobPutGet},
	{"BlobErrors", testBlobErrors},
	{"BlobCollected", testBlobCollected},
	{"BlobParts", testBlobParts},
	{"BlobPutWhileDeleting", testBlobPutWhileDeleting},
	{"BlobCreatedWith", testBlobCreatedWith},
}

// testBlobCreatedWith: a run created with blobs (store.Run.Blobs) refers
// to them from its first record: bytes given are kept, a hash given names
// a blob kept for another run, and an unknown hash creates nothing. A
// blob no run refers to is reported missing, naming the run and hash.
func testBlobCreatedWith(t *testing.T, s store.Store) {
	b := blobs(t, s)
	ctx := t.Context()
	data := bytes.Repeat([]byte("\x89PNG"), 2000)
	r := newRun("with")
	r.Blobs = []store.BlobRef{{Data: data}}
	if _, err := s.Create(ctx, r, "o", long, nil); err != nil {
		t.Fatalf("Create with a blob: %v", err)
	}
	h := store.BlobHash(data)
	if got, err := b.Blob(ctx, "with", h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Blob of the run created with it = %d bytes, %v", len(got), err)
	}
	child := newRun("child")
	child.Blobs = []store.BlobRef{{Hash: h}}
	if _, err := s.Create(ctx, child, "o", long, nil); err != nil {
		t.Fatalf("Create referring to a kept blob: %v", err)
	}
	if got, err := b.Blob(ctx, "child", h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Blob of the run created referring to it = %d bytes, %v", len(got), err)
	}
	unknown := strings.Repeat("ab", 32)
	bad := newRun("bad")
	bad.Blobs = []store.BlobRef{{Data: []byte("ok, but")}, {Hash: unknown}}
	if _, err := s.Create(ctx, bad, "o", long, nil); !errors.Is(err, store.ErrNoBlob) {
		t.Fatalf("Create referring to an unknown blob: %v, want ErrNoBlob", err)
	}
	if _, err := s.Get(ctx, "bad"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused Create left the run: %v", err)
	}
	if _, err := b.Blob(ctx, "with", unknown); !errors.Is(err, store.ErrNoBlob) || !strings.Contains(err.Error(), unknown) ||
		!strings.Contains(err.Error(), "with") || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Blob of a blob not kept: %v, want ErrNoBlob saying the blob %s of run with is missing", err, unknown)
	}
	dup := newRun("with")
	dup.Blobs = []store.BlobRef{{Data: []byte("other bytes")}}
	if _, err := s.Create(ctx, dup, "o", long, nil); !errors.Is(err, store.ErrExists) {
		t.Fatalf("Create of a taken id with blobs: %v, want ErrExists", err)
	}
}

// blobs returns s as store.Blobs, skipping t if it is not one.
func blobs(t testing.TB, s store.Store) store.Blobs {
	t.Helper()
	b, ok := s.(store.Blobs)
	if !ok {
		t.Skipf("%T does not implement store.Blobs: blob cases skipped", s)
	}
	return b
}

func putBlob(t *testing.T, b store.Blobs, id string, data []byte) string {
	t.Helper()
	h, err := b.PutBlob(t.Context(), id, data)
	if err != nil {
		t.Fatalf("PutBlob(%s, %d bytes): %v", id, len(data), err)
	}
	return h
}

func testBlobPutGet(t *testing.T, s store.Store) {
	b := blobs(t, s)
	ctx := t.Context()
	create(t, s, "r1", "o", long)
	create(t, s, "r2", "o", long)
	data := bytes.Repeat([]byte("\x89PNG\x00\xff"), 1000)
	sum := sha256.Sum256(data)
	in := bytes.Clone(data)
	h := putBlob(t, b, "r1", in)
	if h != hex.EncodeToString(sum[:]) || !model.IsBlobHash(h) {
		t.Fatalf("hash %q, want the hex SHA-256 of the bytes", h)
	}
	in[0] = 'X' // the store kept its own copy
	got, err := b.Blob(ctx, "r1", h)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Blob(r1) = %d bytes, %v; want the bytes put", len(got), err)
	}
	got[1] = 'X' // and hands out copies
	if again, _ := b.Blob(ctx, "r1", h); !bytes.Equal(again, data) {
		t.Fatal("changing returned bytes changed the blob")
	}
	if h2 := putBlob(t, b, "r1", data); h2 != h {
		t.Fatalf("second put: hash %q, want %q", h2, h)
	}
	// A run sees only the blobs it refers to.
	_, err = b.Blob(ctx, "r2", h)
	wantErr(t, "Blob of a run that does not refer to it", err, store.ErrNoBlob)
	_, err = b.Blob(ctx, "nope", h)
	wantErr(t, "Blob of an unknown run", err, store.ErrNoBlob)
	if err := b.RefBlob(ctx, "r2", h); err != nil {
		t.Fatalf("RefBlob: %v", err)
	}
	if got, err := b.Blob(ctx, "r2", h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Blob(r2) after RefBlob: %d bytes, %v", len(got), err)
	}
}

func testBlobErrors(t *testing.T, s store.Store) {
	b := blobs(t, s)
	ctx := t.Context()
	create(t, s, "r1", "o", long)
	if _, err := b.PutBlob(ctx, "r1", nil); err == nil {
		t.Error("PutBlob of no bytes succeeded")
	}
	_, err := b.PutBlob(ctx, "r1", make([]byte, store.MaxBlobBytes+1))
	wantErr(t, "PutBlob over the limit", err, store.ErrTooLarge)
	_, err = b.PutBlob(ctx, "nope", []byte("x"))
	wantErr(t, "PutBlob for an unknown run", err, store.ErrNotFound)
	err = b.RefBlob(ctx, "r1", store.BlobHash([]byte("never put")))
	wantErr(t, "RefBlob of an unknown blob", err, store.ErrNoBlob)
	h := putBlob(t, b, "r1", []byte("x"))
	err = b.RefBlob(ctx, "nope", h)
	wantErr(t, "RefBlob from an unknown run", err, store.ErrNotFound)
}

// Deleting runs deletes their references, and a blob no run refers to any
// longer is collected; one another run refers to stays.
func testBlobCollected(t *testing.T, s store.Store) {
	b := blobs(t, s)
	d := deleter(t, s)
	ctx := t.Context()
	l1 := create(t, s, "r1", "o", long, rec("k"))
	c1 := createChild(t, s, "c1", "r1")
	l2 := create(t, s, "r2", "o", long, rec("k"))
	shared, own := []byte("shared bytes"), []byte("bytes of r1 alone")
	h := putBlob(t, b, "r1", shared)
	ho := putBlob(t, b, "c1", own)
	putBlob(t, b, "r2", shared)
	if err := b.RefBlob(ctx, "c1", h); err != nil {
		t.Fatal(err)
	}
	finish(t, s, c1, store.Completed)
	finish(t, s, l1, store.Completed)
	if _, err := d.DeleteRun(ctx, "r1"); err != nil {
		t.Fatalf("DeleteRun: %v", err)
	}
	if got, err := b.Blob(ctx, "r2", h); err != nil || !bytes.Equal(got, shared) {
		t.Fatalf("r2's blob after deleting r1: %q, %v", got, err)
	}
	create(t, s, "r1", "o", long)
	_, err := b.Blob(ctx, "r1", h)
	wantErr(t, "a new run with a deleted run's id", err, store.ErrNoBlob)
	err = b.RefBlob(ctx, "r1", ho)
	wantErr(t, "RefBlob of the deleted tree's own blob", err, store.ErrNoBlob)

	create(t, s, "r3", "o", long)
	if err := b.RefBlob(ctx, "r3", h); err != nil {
		t.Fatalf("RefBlob of a blob r2 still holds: %v", err)
	}
	finish(t, s, l2, store.Completed)
	if _, err := d.DeleteRun(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Blob(ctx, "r3", h); err != nil {
		t.Fatalf("r3's reference did not keep the blob: %v", err)
	}
	l3, err := s.Claim(ctx, "r3", "o", long)
	if err != nil {
		t.Fatal(err)
	}
	finish(t, s, l3, store.Stopped)
	if n, err := d.DeleteFinished(ctx, get(t, s, "r3").UpdatedAt.Add(1e9), 10); err != nil || n != 1 {
		t.Fatalf("DeleteFinished: %d, %v; want r3 deleted", n, err)
	}
	err = b.RefBlob(ctx, "r1", h)
	wantErr(t, "RefBlob after every run referring to it was deleted", err, store.ErrNoBlob)
}

// PutParts keeps large parts as blobs, by reference, and LoadParts brings
// their bytes back; small parts stay inline.
func testBlobParts(t *testing.T, s store.Store) {
	b := blobs(t, s)
	ctx := t.Context()
	create(t, s, "r1", "o", long)
	big := bytes.Repeat([]byte{1, 2, 3, 4}, store.BlobThreshold)
	msgs := []model.Message{
		{Role: model.RoleUser, Content: "look", Parts: []model.Part{model.Image("image/png", big), model.Image("image/gif", []byte("GIF89a"))}},
		{Role: model.RoleAssistant, Content: "a chart"},
	}
	put, err := store.PutParts(ctx, b, "r1", msgs)
	if err != nil {
		t.Fatalf("PutParts: %v", err)
	}
	if len(msgs[0].Parts[0].Data) != len(big) {
		t.Fatal("PutParts changed its input")
	}
	p := put[0].Parts[0]
	if p.Blob != store.BlobHash(big) || p.Size != int64(len(big)) || p.Data != nil || p.MediaType != "image/png" {
		t.Fatalf("large part = %v, want a blob reference", p)
	}
	if q := put[0].Parts[1]; q.Blob != "" || string(q.Data) != "GIF89a" {
		t.Fatalf("small part = %v, want it inline", q)
	}
	enc, _ := json.Marshal(put)
	if len(enc) > 1024 {
		t.Errorf("messages with a blob reference encode to %d bytes, want well under the part's %d", len(enc), len(big))
	}
	cache := map[string][]byte{}
	loaded, err := store.LoadParts(ctx, b, "r1", put, cache)
	if err != nil {
		t.Fatalf("LoadParts: %v", err)
	}
	if l := loaded[0].Parts[0]; !bytes.Equal(l.Data, big) || l.Blob != p.Blob || put[0].Parts[0].Data != nil {
		t.Fatalf("loaded part = %v (input changed: %v)", l, put[0].Parts[0].Data != nil)
	}
	if len(cache) != 1 {
		t.Errorf("cache holds %d blobs, want 1", len(cache))
	}
	create(t, s, "r2", "o", long)
	if _, err := store.LoadParts(ctx, b, "r2", put, nil); !errors.Is(err, store.ErrNoBlob) {
		t.Errorf("LoadParts for a run that does not refer to the blob: %v, want ErrNoBlob", err)
	}
	// Parts handed to another run are referred to from it.
	if _, err := store.PutParts(ctx, b, "r2", put); err != nil {
		t.Fatal(err)
	}
	if _, err := store.LoadParts(ctx, b, "r2", put, nil); err != nil {
		t.Errorf("LoadParts after PutParts for r2: %v", err)
	}
}

// A run putting the same bytes as a run being deleted keeps them: the
// deletion either sees the new reference, or collects the blob before
// the put, which then stores the bytes anew.
func testBlobPutWhileDeleting(t *testing.T, s store.Store) {
	b := blobs(t, s)
	d := deleter(t, s)
	ctx := t.Context()
	create(t, s, "keeper", "o", long)
	for i := range 20 {
		id := fmt.Sprintf("gone-%d", i)
		l := create(t, s, id, "o", long, rec("k"))
		data := []byte(fmt.Sprintf("bytes shared at the moment of deletion %d", i))
		putBlob(t, b, id, data)
		finish(t, s, l, store.Completed)
		var wg sync.WaitGroup
		var derr, perr error
		wg.Go(func() { _, derr = d.DeleteRun(ctx, id) })
		wg.Go(func() { _, perr = b.PutBlob(ctx, "keeper", data) })
		wg.Wait()
		if derr != nil || perr != nil {
			t.Fatalf("round %d: DeleteRun: %v; PutBlob: %v", i, derr, perr)
		}
		if got, err := b.Blob(ctx, "keeper", store.BlobHash(data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round %d: the keeper's blob after a concurrent deletion: %q, %v", i, got, err)
		}
	}
}
