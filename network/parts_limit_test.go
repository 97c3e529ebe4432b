package network

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/swarmrt/swarm/store"
)

// A peer's file part of exactly store.MaxBlobBytes is taken; one byte more
// is refused as too large.
func TestFilePartOfExactlyMaxBlobBytes(t *testing.T) {
	data := make([]byte, store.MaxBlobBytes+1)
	part := func(n int) []FilePart {
		return []FilePart{{Kind: "file", File: FileData{Name: "a.bin", MimeType: "application/octet-stream", Bytes: base64.StdEncoding.EncodeToString(data[:n])}}}
	}
	ps, err := modelParts(part(store.MaxBlobBytes))
	if err != nil || len(ps) != 1 || ps[0].Len() != store.MaxBlobBytes {
		t.Fatalf("a part of exactly MaxBlobBytes: %d parts, %v", len(ps), err)
	}
	if _, err := modelParts(part(store.MaxBlobBytes + 1)); !errors.Is(err, ErrBadPart) || !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("a part one byte over MaxBlobBytes: %v, want ErrBadPart and ErrTooLarge", err)
	}
}
