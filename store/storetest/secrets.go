package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/swarmrt/swarm/store"
)

var secretTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"Secrets", testSecrets},
}

// testSecrets checks store.Secrets: put, replace, read, delete, limits.
func testSecrets(t *testing.T, s store.Store) {
	sec, ok := s.(store.Secrets)
	if !ok {
		t.Skipf("%T does not implement store.Secrets: secret cases skipped", s)
	}
	ctx := context.Background()
	if _, err := sec.Secret(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing secret: %v", err)
	}
	for _, v := range [][]byte{{0, 1, 2, 0xff}, []byte("second")} {
		if err := sec.PutSecret(ctx, "a", v); err != nil {
			t.Fatal(err)
		}
		got, err := sec.Secret(ctx, "a")
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("secret a = %q, %v; want %q", got, err, v)
		}
	}
	if err := sec.PutSecret(ctx, "b", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if err := sec.PutSecret(ctx, "big", make([]byte, store.MaxSecretBytes+1)); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("oversized secret: %v", err)
	}
	if err := sec.DeleteSecret(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := sec.DeleteSecret(ctx, "a"); err != nil {
		t.Errorf("deleting a missing secret: %v", err)
	}
	if _, err := sec.Secret(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted secret: %v", err)
	}
	if got, err := sec.Secret(ctx, "b"); err != nil || string(got) != "other" {
		t.Errorf("secret b = %q, %v", got, err)
	}
}
