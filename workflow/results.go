package workflow

import (
	"context"
	"fmt"
	"sync"
)

// scope holds the outputs of the nodes that finished before the step
// running in it, by name: a sequence's steps share one, each branch of a
// parallel step, a for-each or a graph's fork has its own on top of it,
// and what the branches a join took finished joins the scope after it.
type scope struct {
	parent *scope
	mu     sync.Mutex
	outs   map[string]any
}

type scopeKey struct{}

// inScope returns ctx with a new scope on top of ctx's.
func inScope(ctx context.Context) (context.Context, *scope) {
	parent, _ := ctx.Value(scopeKey{}).(*scope)
	s := &scope{parent: parent}
	return context.WithValue(ctx, scopeKey{}, s), s
}

// scopeOf is ctx's scope (nil outside a workflow).
func scopeOf(ctx context.Context) *scope {
	s, _ := ctx.Value(scopeKey{}).(*scope)
	return s
}

// finished adds the output of the node name to ctx's scope.
func finished(ctx context.Context, name string, out any) {
	if s, ok := ctx.Value(scopeKey{}).(*scope); ok && name != "" {
		s.mu.Lock()
		if s.outs == nil {
			s.outs = map[string]any{}
		}
		s.outs[name] = out
		s.mu.Unlock()
	}
}

// merge adds what finished in the scope of a branch to s.
func (s *scope) merge(b *scope) {
	if s == nil || b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, out := range b.outs {
		s.mu.Lock()
		if s.outs == nil {
			s.outs = map[string]any{}
		}
		s.outs[name] = out
		s.mu.Unlock()
	}
}

// Output returns, as a T, the output of the node named name that finished
// before the step that calls it (inside a [Func] or a Go function a step
// runs): a node earlier in its sequence, a branch of an earlier parallel
// step or fork that its join took, a node earlier in its own branch, and
// so on outward. When the node ran more than once (a loop, a cycle, a
// retry), it is its latest output. A node that ran in a branch the caller
// is not in, not before it, or not at all is an error, as is an output
// that is not a T. What Output reads comes from the journal on a replay,
// so a recovered run reads the same values.
func Output[T any](ctx context.Context, name string) (T, error) {
	var zero T
	for s, _ := ctx.Value(scopeKey{}).(*scope); s != nil; s = s.parent {
		s.mu.Lock()
		out, ok := s.outs[name]
		s.mu.Unlock()
		if !ok {
			continue
		}
		if v, ok := out.(T); ok {
			return v, nil
		}
		raw, err := encode(out)
		if err != nil {
			return zero, fmt.Errorf("workflow.Output %s: %w", name, err)
		}
		v, err := decode[T](raw)
		if err != nil {
			return zero, fmt.Errorf("workflow.Output %s: not a %T: %w", name, zero, err)
		}
		return v, nil
	}
	return zero, fmt.Errorf("workflow.Output: no node named %q finished before this step", name)
}
