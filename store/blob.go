package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/swarmrt/swarm/model"
)

// MaxBlobBytes bounds a blob: the largest image, file or audio a run can
// carry.
const MaxBlobBytes = 64 << 20

// BlobThreshold is the size above which [PutParts] keeps a part's bytes
// as a blob instead of inline: a part that rides in every model request
// of a run is then journaled once, by reference, whatever the number of
// turns.
const BlobThreshold = 4 << 10

// ErrNoBlob: no blob with that hash is kept for the run.
var ErrNoBlob = errors.New("blob not found")

// Blobs is implemented by stores that keep content-addressed blobs beside
// the journal: the bytes of large message parts (images, files, audio),
// kept once by their SHA-256 and referred to from records by hash
// ([model.Part.Blob]), so that neither the journal nor snapshots nor event
// streams copy them. It is optional: without it parts stay inline.
//
// Every blob is referred to by the runs that use it. A run sees only the
// blobs it refers to, so that a reader allowed to see a run sees nothing
// else. A run's first blobs (its input's parts) are kept by Create with
// the run (see Run.Blobs); later ones are put before the records that
// name them, so that no record names a blob that is not kept. Deleting a run (see [Deleter]) drops its references, and a blob
// that no run refers to any longer is deleted in the same transaction.
type Blobs interface {
	// PutBlob keeps data under its SHA-256 and records that run id refers
	// to it, in one transaction, and returns the hash in lowercase hex.
	// Bytes already kept are not stored again. An unknown run gives
	// ErrNotFound, empty data an error, data over MaxBlobBytes
	// ErrTooLarge; then nothing changes.
	PutBlob(ctx context.Context, id string, data []byte) (string, error)
	// RefBlob records that run id refers to the blob hash, kept for
	// another run: a fork or a child run sharing its source's blobs.
	// An unknown run gives ErrNotFound, an unknown blob ErrNoBlob.
	RefBlob(ctx context.Context, id, hash string) error
	// Blob returns the bytes of the blob hash if run id refers to it, and
	// ErrNoBlob otherwise (for an unknown run too).
	Blob(ctx context.Context, id, hash string) ([]byte, error)
}

// BlobRef is a blob a run is created with (see Run.Blobs): Data, kept
// under its hash, or, without Data, Hash, which names a blob kept already
// (a parent's part handed to a child run, a fork's origin's) that Create
// refuses with ErrNoBlob, creating nothing, if it is not kept.
type BlobRef struct {
	Hash string
	Data []byte
}

// Sum returns the hash of the blob b names: that of its Data if it has
// any, else Hash.
func (b BlobRef) Sum() string {
	if len(b.Data) > 0 {
		return BlobHash(b.Data)
	}
	return b.Hash
}

// CheckRunBlobs reports why run id cannot be created with blobs bs: data
// that CheckBlob refuses, or a reference without a hash. Stores call it
// first in Create when bs is not empty.
func CheckRunBlobs(id string, bs []BlobRef) error {
	for _, b := range bs {
		switch {
		case len(b.Data) > 0:
			if err := CheckBlob(id, b.Data); err != nil {
				return err
			}
		case b.Hash == "":
			return fmt.Errorf("create run %q: a blob reference without a hash", id)
		}
	}
	return nil
}

// NoBlob is the error of a blob, named by hash, that run id does not
// refer to or that is not kept: it matches ErrNoBlob and says so plainly.
func NoBlob(id, hash string) error {
	return fmt.Errorf("blob %s of run %s is missing: %w", hash, id, ErrNoBlob)
}

// BlobHash returns the hash under which a store keeps data: its SHA-256
// in lowercase hex.
func BlobHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// CheckBlob reports why data cannot be kept as a blob of run id: empty,
// or over MaxBlobBytes ([ErrTooLarge]). Stores call it first in PutBlob.
func CheckBlob(id string, data []byte) error {
	switch {
	case len(data) == 0:
		return fmt.Errorf("put blob for run %q: no bytes", id)
	case len(data) > MaxBlobBytes:
		return fmt.Errorf("put blob for run %q: %d bytes, over the limit of %d: %w", id, len(data), MaxBlobBytes, ErrTooLarge)
	}
	return nil
}

// PutParts returns msgs with the bytes of every part over BlobThreshold
// kept in b as blobs of run id: such a part gets Blob (its hash) and Size,
// and loses Data. msgs is not changed; messages without a large part are
// shared with the result. A part already holding a blob is referred to
// from run id (RefBlob), so that a run given another run's parts keeps
// them alive.
func PutParts(ctx context.Context, b Blobs, id string, msgs []model.Message) ([]model.Message, error) {
	return mapParts(msgs, func(p *model.Part) (bool, error) {
		switch {
		case p.Blob != "":
			if len(p.Data) > 0 { // loaded: back to the reference
				p.Data = nil
				return true, b.RefBlob(ctx, id, p.Blob)
			}
			return false, b.RefBlob(ctx, id, p.Blob)
		case len(p.Data) <= BlobThreshold:
			return false, nil
		}
		hash, err := b.PutBlob(ctx, id, p.Data)
		if err != nil {
			return false, err
		}
		p.Blob, p.Size, p.Data = hash, int64(len(p.Data)), nil
		return true, nil
	})
}

// LoadParts returns msgs with the bytes of every part that refers to a
// blob loaded from b (as run id sees it) into Data, so that a model gets
// them; Blob and Size are kept. msgs is not changed. cache, when not nil, keeps the bytes loaded
// by hash, so that a run reads a blob from the store once however many
// calls send it; bytes in the cache are shared, not copied, and must not
// be changed.
func LoadParts(ctx context.Context, b Blobs, id string, msgs []model.Message, cache map[string][]byte) ([]model.Message, error) {
	return mapParts(msgs, func(p *model.Part) (bool, error) {
		if p.Blob == "" || len(p.Data) > 0 {
			return false, nil
		}
		data, ok := cache[p.Blob]
		if !ok {
			var err error
			if data, err = b.Blob(ctx, id, p.Blob); err != nil {
				return false, err
			}
			if cache != nil {
				cache[p.Blob] = data
			}
		}
		p.Data = data // Blob and Size stay: they name the bytes
		return true, nil
	})
}

// mapParts returns msgs with f applied to a copy of each part; f reports
// whether it changed the part. Messages and part lists that f leaves
// unchanged are shared with msgs, which is never changed.
func mapParts(msgs []model.Message, f func(p *model.Part) (bool, error)) ([]model.Message, error) {
	out := msgs
	for i := range msgs {
		var parts []model.Part
		for j := range msgs[i].Parts {
			p := msgs[i].Parts[j]
			changed, err := f(&p)
			if err != nil {
				return nil, fmt.Errorf("message %d part %d (%s): %w", i, j, p.Type, err)
			}
			if !changed {
				continue
			}
			if parts == nil {
				parts = slices.Clone(msgs[i].Parts)
			}
			parts[j] = p
		}
		if parts == nil {
			continue
		}
		if &out[0] == &msgs[0] {
			out = slices.Clone(msgs)
		}
		out[i].Parts = parts
	}
	return out, nil
}
