package swarm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Budget bounds a whole run tree: the run, its agents and every child swarm
// below it, however many run in parallel and on whichever node. Zero fields
// are unlimited. Reaching a limit fails the run with a reason that names the
// limit, or pauses it when Pause is set; resuming a run paused by its budget
// lifts the budget for the rest of the run tree: one resume lets every run
// of the tree continue, including children that paused on the budget too.
//
// The tree has one pool, kept in the store on the root run's row (see
// store.Store.Spend), so it holds across processes, nodes and recoveries:
//
//   - ModelCalls is never exceeded. Every request sent to a model, a retry
//     of a failed one included, reserves one call from the pool before it
//     starts and never gives it back. A call interrupted by a crash before
//     its response was journaled counts, and its retry after recovery
//     reserves again; a journaled response replayed by recovery does not.
//   - Tokens and Cost are known only when a call returns, and are added to
//     the pool before its response is journaled. A call starts only while
//     the pool is below both limits, so the tree passes them by at most
//     the usage of the calls in flight (reserved, not yet returned) at the
//     moment the pool crossed the limit.
//   - WallTime is a deadline on the whole tree, measured from the root
//     run's start: when it passes, the model calls, tools and child runs in
//     flight are cancelled and each run of the tree fails (or pauses) with
//     a reason naming the wall time. A run that is not being driven then
//     (paused, or waiting to be adopted) notices when it is driven next.
//
// Runs without a budget make no extra store round trips.
type Budget struct {
	// Tokens bounds input plus output tokens.
	Tokens int64 `json:"tokens,omitempty"`
	// Cost bounds the cost in US dollars (from the model price table).
	Cost float64 `json:"cost,omitempty"`
	// ModelCalls bounds the number of requests sent to models.
	ModelCalls int64 `json:"model_calls,omitempty"`
	// WallTime bounds the time from the root run's start.
	WallTime time.Duration `json:"wall_time,omitempty"`
	// Pause pauses the run instead of failing it.
	Pause bool `json:"pause,omitempty"`
}

// WithBudget bounds the run and everything below it.
func WithBudget(b Budget) StartOption { return func(c *startConfig) { c.budget = &b } }

// budgetKind marks a paused event caused by the budget (Event.Kind), in the
// run that reached a limit and in the ancestors the pause surfaces in.
const budgetKind = "budget"

// pooled reports whether b limits anything kept in the tree's pool.
func (b *Budget) pooled() bool { return b.Tokens > 0 || b.Cost > 0 || b.ModelCalls > 0 }

// exceeded reports which limit keeps a new model call from starting when the
// tree's pool is p at time now, or "".
func (b *Budget) exceeded(p store.Pool, deadline, now time.Time) string {
	if b == nil || p.Lifted {
		return ""
	}
	var over []string
	if b.Tokens > 0 && p.Tokens >= b.Tokens {
		over = append(over, fmt.Sprintf("tokens %d of %d", p.Tokens, b.Tokens))
	}
	if b.Cost > 0 && p.Cost >= b.Cost {
		over = append(over, fmt.Sprintf("cost $%.4f of $%.4f", p.Cost, b.Cost))
	}
	if b.ModelCalls > 0 && p.Calls >= b.ModelCalls {
		// Refused reservations count too; the calls made are the limit.
		over = append(over, fmt.Sprintf("model calls %d of %d", b.ModelCalls, b.ModelCalls))
	}
	if !deadline.IsZero() && !now.Before(deadline) {
		over = append(over, fmt.Sprintf("wall time %s", b.WallTime))
	}
	if len(over) == 0 {
		return ""
	}
	return "budget exceeded: " + strings.Join(over, ", ")
}

// budgetError fails a run whose budget is exhausted.
type budgetError struct{ reason string }

func (e *budgetError) Error() string { return e.reason }

// errBudgetPaused: the budget is exhausted and the run paused for a human.
var errBudgetPaused = errors.New("paused: budget exceeded")

// errWallTime cancels a run whose tree's wall-time budget has passed.
var errWallTime = errors.New("budget exceeded: wall time")

// spend applies d to the tree's pool and notes what it returns.
func (r *runner) spend(ctx context.Context, d store.Pool) (store.Pool, error) {
	p, err := r.rt.store.Spend(ctx, r.root, d)
	if err != nil {
		return p, &storeError{fmt.Errorf("budget of run tree %s: %w", r.root, err)}
	}
	r.mu.Lock()
	r.pool = p
	r.mu.Unlock()
	if p.Lifted {
		r.lifted.Store(true)
	}
	return p, nil
}

// liftedNow reports whether the tree's budget has been lifted, asking the
// store unless this run already knows.
func (r *runner) liftedNow(ctx context.Context) (bool, error) {
	if r.lifted.Load() {
		return true, nil
	}
	p, err := r.spend(ctx, store.Pool{})
	return p.Lifted, err
}

// checkBudget runs before each request to a model: it reserves the call
// from the tree's pool, or pauses or fails the run if a limit is reached.
func (r *runner) checkBudget(ctx context.Context, ap *agentPlan, tkey string, turn int) error {
	if r.budget == nil || r.lifted.Load() {
		return nil
	}
	now := time.Now()
	var d store.Pool
	switch {
	case r.budget.pooled():
		d.Calls = 1
	case r.deadline.IsZero() || now.Before(r.deadline):
		return nil // only a wall time, not reached: nothing to ask the store
	}
	p, err := r.spend(ctx, d)
	if err != nil {
		return err
	}
	p.Calls -= d.Calls // the pool before this reservation
	reason := r.budget.exceeded(p, r.deadline, now)
	if reason == "" {
		return nil
	}
	if !r.budget.Pause {
		return &budgetError{reason: reason}
	}
	ev := Event{Type: EventPaused, Key: tkey + "/budget", Agent: ap.name, Turn: turn, Kind: budgetKind, Reason: reason,
		Context: "Resume to let the run continue beyond its budget."}
	u := store.Update{State: store.Paused, Reason: reason}
	if ap.root {
		u.Turn = turn
	}
	if err := r.append(ctx, []Event{ev}, u, ap); err != nil {
		return err
	}
	return errBudgetPaused
}

// spent adds a returned call's usage to the tree's pool, when the budget
// limits tokens or cost.
func (r *runner) spent(ctx context.Context, u model.Usage) error {
	if r.budget == nil || r.lifted.Load() || (r.budget.Tokens <= 0 && r.budget.Cost <= 0) {
		return nil
	}
	_, err := r.spend(ctx, store.Pool{Tokens: u.InputTokens + u.OutputTokens, Cost: u.Cost})
	return err
}

// underDeadline runs fn with a context that is cancelled when the tree's
// wall-time budget passes (unless the budget is lifted by then), so that the
// model calls, tools and child runs in flight end, and turns that
// interruption into the run's failure, or pause.
func (r *runner) underDeadline(ctx context.Context, fn func(context.Context) outcome) outcome {
	if r.budget == nil || r.deadline.IsZero() || r.lifted.Load() {
		return fn(ctx)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := time.AfterFunc(time.Until(r.deadline), func() {
		if lifted, err := r.liftedNow(ctx); err == nil && lifted {
			return
		}
		cancel(errWallTime)
	})
	out := fn(wctx)
	t.Stop()
	if out.kind != interrupted || ctx.Err() != nil || !errors.Is(context.Cause(wctx), errWallTime) {
		return out
	}
	reason := "budget exceeded: wall time " + r.budget.WallTime.String()
	if !r.budget.Pause {
		return outcome{kind: failed, reason: reason, abort: true}
	}
	ev := Event{Type: EventPaused, Key: "wall/budget", Agent: r.info.id, Kind: budgetKind, Reason: reason,
		Context: "Resume to let the run continue beyond its budget."}
	if err := r.append(ctx, []Event{ev}, store.Update{State: store.Paused, Reason: reason}, r.plan.root); err != nil {
		return outcome{kind: interrupted, err: err}
	}
	return outcome{kind: paused}
}

// isBudgetPause reports whether a paused event was caused by the budget.
func isBudgetPause(ev Event) bool {
	return ev.Kind == budgetKind || strings.HasSuffix(ev.Key, "/budget")
}
