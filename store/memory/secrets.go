package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/swarmrt/swarm/store"
)

var _ store.Secrets = (*Store)(nil)

// secretMap holds a store's secrets.
type secretMap struct {
	secretsMu sync.Mutex
	secrets   map[string][]byte
}

// PutSecret implements store.Secrets.
func (s *Store) PutSecret(ctx context.Context, name string, value []byte) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if len(value) > store.MaxSecretBytes {
		return fmt.Errorf("secret %q: %d bytes: %w", name, len(value), store.ErrTooLarge)
	}
	s.secretsMu.Lock()
	defer s.secretsMu.Unlock()
	if s.secrets == nil {
		s.secrets = map[string][]byte{}
	}
	s.secrets[name] = slices.Clone(value)
	return nil
}

// Secret implements store.Secrets.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.secretsMu.Lock()
	defer s.secretsMu.Unlock()
	v, ok := s.secrets[name]
	if !ok {
		return nil, fmt.Errorf("secret %q: %w", name, store.ErrNotFound)
	}
	return slices.Clone(v), nil
}

// DeleteSecret implements store.Secrets.
func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.secretsMu.Lock()
	defer s.secretsMu.Unlock()
	delete(s.secrets, name)
	return nil
}
