package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Factory opens a model for the part of a spec after "provider:".
type Factory func(name string) (Model, error)

var (
	mu        sync.RWMutex
	factories = map[string]Factory{}
)

// ErrUnknownProvider is returned by Open for a spec naming no registered provider.
var ErrUnknownProvider = errors.New("unknown model provider")

// Register makes a provider available to Open under name. It panics if
// called twice with the same name, like database/sql.Register.
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := factories[name]; dup {
		panic("model: Register called twice for provider " + name)
	}
	factories[name] = f
}

// Providers lists the registered provider names, sorted.
func Providers() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Open returns the model for a spec of the form "provider:name", such as
// "scripted:script.yaml".
func Open(spec string) (Model, error) {
	provider, name, _ := strings.Cut(spec, ":")
	mu.RLock()
	f, ok := factories[provider]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q in model spec %q (known: %s)", ErrUnknownProvider, provider, spec, strings.Join(Providers(), ", "))
	}
	m, err := f(name)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", spec, err)
	}
	return m, nil
}
