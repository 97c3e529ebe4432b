package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/internal/seam"
)

// Hook plugs Temporal into a runtime as its swarm.Config.Engine: the
// runtime's Start, Resume, Stop and Say of the swarms the hook names go to
// an Engine, whose workflows mirror their records into the runtime's
// store, so that Status, Wait, Events, swarm serve and the dashboard
// read them as any run. The runtime never drives those runs itself.
//
//	h := temporal.NewHook(temporal.Options{Client: c})
//	rt, err := swarm.New(swarm.Config{Store: st, Engine: h})
//	...
//	w := worker.New(c, temporal.DefaultTaskQueue, worker.Options{})
//	h.Engine().Register(w)
type Hook struct {
	o      Options
	swarms []string // nil: all

	mu  sync.Mutex
	eng *Engine
}

var _ seam.Engine = (*Hook)(nil)

// NewHook returns a hook that runs the swarms named on Temporal through o,
// and every swarm of the runtime when none is named.
func NewHook(o Options, swarms ...string) *Hook {
	h := &Hook{o: o}
	if len(swarms) > 0 {
		h.swarms = slices.Clone(swarms)
	}
	return h
}

// Bind makes the hook's Engine for rt, a *swarm.Runtime; swarm.New calls
// it. A hook serves one runtime.
func (h *Hook) Bind(rt any) error {
	r, ok := rt.(*swarm.Runtime)
	if !ok {
		return fmt.Errorf("temporal: bind to %T, not a *swarm.Runtime", rt)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.eng != nil {
		return errors.New("temporal: the hook is bound to another runtime already; make one hook per runtime")
	}
	if h.o.Client == nil {
		return errors.New("temporal: Options.Client is nil")
	}
	e, err := New(r, h.o)
	if err != nil {
		return err
	}
	h.eng = e
	return nil
}

// Engine returns the engine the hook drives runs with (register it on
// the workers of its task queue), nil before swarm.New has bound the
// hook.
func (h *Hook) Engine() *Engine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.eng
}

// Runs reports whether the hook's engine runs swarm id's runs.
func (h *Hook) Runs(id string) bool { return h.swarms == nil || slices.Contains(h.swarms, id) }

func (h *Hook) engine() (*Engine, error) {
	if e := h.Engine(); e != nil {
		return e, nil
	}
	return nil, errors.New("temporal: the hook is not bound to a runtime (pass it in swarm.Config.Engine)")
}

// Start starts run id of swarm as a workflow whose id is id.
func (h *Hook) Start(ctx context.Context, swarmID, id string, input json.RawMessage) error {
	e, err := h.engine()
	if err != nil {
		return err
	}
	_, err = e.Start(ctx, swarmID, id, input)
	if errors.Is(err, ErrUnsupported) {
		// A kind of run refused before anything is stored: a mistake in
		// the definition, as the runtime reports its own.
		return fmt.Errorf("%w: %w", swarm.ErrInvalid, err)
	}
	return err
}

// Resume answers the pause of run id with message.
func (h *Hook) Resume(ctx context.Context, id, message string) error {
	e, err := h.engine()
	if err != nil {
		return err
	}
	return e.Resume(ctx, id, message)
}

// Stop cancels run id with reason.
func (h *Hook) Stop(ctx context.Context, id, reason string) error {
	e, err := h.engine()
	if err != nil {
		return err
	}
	return e.Stop(ctx, id, reason)
}
