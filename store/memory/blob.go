package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/swarmrt/swarm/store"
)

var _ store.Blobs = (*Store)(nil)

// blobMap holds the store's blobs by hash, each with the runs that refer
// to it.
type blobMap struct {
	blobsMu sync.Mutex
	blobs   map[string]*blob
}

type blob struct {
	data []byte
	refs map[string]struct{}
}

// PutBlob implements store.Blobs. It holds deleteMu, so that a run being
// deleted cannot gain a reference.
func (s *Store) PutBlob(ctx context.Context, id string, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := store.CheckBlob(id, data); err != nil {
		return "", err
	}
	s.deleteMu.Lock()
	defer s.deleteMu.Unlock()
	if _, err := s.lookup(id); err != nil {
		return "", fmt.Errorf("put blob: %w", err)
	}
	s.blobsMu.Lock()
	defer s.blobsMu.Unlock()
	return s.keepBlob(id, store.BlobRef{Data: data}), nil
}

// keepBlob keeps the data of b, if it is not kept, and makes run id refer
// to it, and returns its hash. The caller holds blobsMu, and has checked
// that a reference without data names a blob kept.
func (s *Store) keepBlob(id string, b store.BlobRef) string {
	hash := b.Sum()
	if s.blobs == nil {
		s.blobs = map[string]*blob{}
	}
	kept := s.blobs[hash]
	if kept == nil {
		kept = &blob{data: slices.Clone(b.Data), refs: map[string]struct{}{}}
		s.blobs[hash] = kept
	}
	kept.refs[id] = struct{}{}
	return hash
}

// RefBlob implements store.Blobs.
func (s *Store) RefBlob(ctx context.Context, id, hash string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.deleteMu.Lock()
	defer s.deleteMu.Unlock()
	if _, err := s.lookup(id); err != nil {
		return fmt.Errorf("refer to blob: %w", err)
	}
	s.blobsMu.Lock()
	defer s.blobsMu.Unlock()
	b := s.blobs[hash]
	if b == nil {
		return fmt.Errorf("refer to blob %q from run %q: %w", hash, id, store.ErrNoBlob)
	}
	b.refs[id] = struct{}{}
	return nil
}

// Blob implements store.Blobs.
func (s *Store) Blob(ctx context.Context, id, hash string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.blobsMu.Lock()
	defer s.blobsMu.Unlock()
	b := s.blobs[hash]
	if b == nil {
		return nil, store.NoBlob(id, hash)
	}
	if _, ok := b.refs[id]; !ok {
		return nil, store.NoBlob(id, hash)
	}
	return slices.Clone(b.data), nil
}

// dropBlobRefs drops run id's references, and the blobs no run refers to
// any longer. The caller holds deleteMu.
func (s *Store) dropBlobRefs(id string) {
	s.blobsMu.Lock()
	defer s.blobsMu.Unlock()
	for hash, b := range s.blobs {
		delete(b.refs, id)
		if len(b.refs) == 0 {
			delete(s.blobs, hash)
		}
	}
}

// BlobCount returns the number of blobs kept and their total size: what
// deleting runs collects.
func (s *Store) BlobCount() (n int, bytes int64) {
	s.blobsMu.Lock()
	defer s.blobsMu.Unlock()
	for _, b := range s.blobs {
		n++
		bytes += int64(len(b.data))
	}
	return n, bytes
}
