package store

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"slices"
	"strings"
	"sync"
)

// Opener opens a store from the part of a URL after "scheme:".
type Opener func(ctx context.Context, rest string) (Store, error)

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// ErrUnknownScheme is returned by Open for an unregistered URL scheme.
var ErrUnknownScheme = errors.New("unknown store scheme")

// Register makes a store implementation available to Open under scheme. It
// panics if a scheme is registered twice.
func Register(scheme string, o Opener) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("store: Register called twice for scheme " + scheme)
	}
	openers[scheme] = o
}

// Open opens a store by URL, such as "memory:" or "sqlite:runs.db".
func Open(ctx context.Context, url string) (Store, error) {
	scheme, rest, ok := strings.Cut(url, ":")
	mu.RLock()
	o, found := openers[scheme]
	var known []string
	for s := range openers {
		known = append(known, s)
	}
	mu.RUnlock()
	if !ok || !found {
		slices.Sort(known)
		return nil, fmt.Errorf("%w in store URL %q (known: %s)", ErrUnknownScheme, url, strings.Join(known, ", "))
	}
	s, err := o(ctx, rest)
	if err != nil {
		return nil, fmt.Errorf("open store %q: %w", Redact(url), err)
	}
	return s, nil
}

// Redact hides the password of a store URL, for messages and logs.
func Redact(rawURL string) string {
	u, err := neturl.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	return u.Redacted()
}
