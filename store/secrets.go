package store

import "context"

// MaxSecretBytes bounds a secret's value.
const MaxSecretBytes = 64 << 10

// Secrets is implemented by stores that keep small named secrets, such as
// the OAuth tokens of the services agents call. The store keeps the bytes
// it is given: callers encrypt them first (see package auth), so that the
// database never holds a usable secret.
type Secrets interface {
	// PutSecret stores value under name, replacing any earlier value. A
	// value over MaxSecretBytes gives ErrTooLarge (wrapped).
	PutSecret(ctx context.Context, name string, value []byte) error
	// Secret returns the value stored under name, or ErrNotFound
	// (wrapped).
	Secret(ctx context.Context, name string) ([]byte, error)
	// DeleteSecret removes name; removing a missing one is no error.
	DeleteSecret(ctx context.Context, name string) error
}
