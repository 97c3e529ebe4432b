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
// below it. Zero fields are unlimited. Exceeding a limit fails the run with
// a reason that names the limit, or pauses it when Pause is set; resuming a
// run paused by its budget lifts the budget for the rest of the run.
//
// A child run starts with what is left of its parent's budget; the parent
// counts a child's usage once the child returns.
type Budget struct {
	// Tokens bounds input plus output tokens.
	Tokens int64 `json:"tokens,omitempty"`
	// Cost bounds the cost in US dollars (from the model price table).
	Cost float64 `json:"cost,omitempty"`
	// ModelCalls bounds the number of model responses.
	ModelCalls int64 `json:"model_calls,omitempty"`
	// WallTime bounds the time from the root run's start.
	WallTime time.Duration `json:"wall_time,omitempty"`
	// Pause pauses the run instead of failing it.
	Pause bool `json:"pause,omitempty"`
}

// WithBudget bounds the run and everything below it.
func WithBudget(b Budget) StartOption { return func(c *startConfig) { c.budget = &b } }

// exceeded reports which limit usage u (at time now) is beyond, or "".
func (b *Budget) exceeded(u model.Usage, deadline, now time.Time) string {
	if b == nil {
		return ""
	}
	var over []string
	if b.Tokens > 0 && u.InputTokens+u.OutputTokens >= b.Tokens {
		over = append(over, fmt.Sprintf("tokens %d of %d", u.InputTokens+u.OutputTokens, b.Tokens))
	}
	if b.Cost > 0 && u.Cost >= b.Cost {
		over = append(over, fmt.Sprintf("cost $%.4f of $%.4f", u.Cost, b.Cost))
	}
	if b.ModelCalls > 0 && u.Calls >= b.ModelCalls {
		over = append(over, fmt.Sprintf("model calls %d of %d", u.Calls, b.ModelCalls))
	}
	if !deadline.IsZero() && !now.Before(deadline) {
		over = append(over, fmt.Sprintf("wall time %s", b.WallTime))
	}
	if len(over) == 0 {
		return ""
	}
	return "budget exceeded: " + strings.Join(over, ", ")
}

// remaining is what a child may still spend when its parent has used u.
func (b *Budget) remaining(u model.Usage) *Budget {
	if b == nil {
		return nil
	}
	r := *b
	if r.Tokens > 0 {
		r.Tokens = max(1, r.Tokens-u.InputTokens-u.OutputTokens)
	}
	if r.Cost > 0 {
		r.Cost = max(1e-9, r.Cost-u.Cost)
	}
	if r.ModelCalls > 0 {
		r.ModelCalls = max(1, r.ModelCalls-u.Calls)
	}
	return &r
}

// budgetError fails a run whose budget is exhausted.
type budgetError struct{ reason string }

func (e *budgetError) Error() string { return e.reason }

// errBudgetPaused: the budget is exhausted and the run paused for a human.
var errBudgetPaused = errors.New("paused: budget exceeded")

// checkBudget runs before each new model call of the run.
func (r *runner) checkBudget(ctx context.Context, ap *agentPlan, tkey string, turn int) error {
	if r.budget == nil || r.lifted {
		return nil
	}
	r.mu.Lock()
	used := r.usage
	r.mu.Unlock()
	reason := r.budget.exceeded(used, r.deadline, time.Now())
	if reason == "" {
		return nil
	}
	if !r.budget.Pause {
		return &budgetError{reason: reason}
	}
	ev := Event{Type: EventPaused, Key: tkey + "/budget", Agent: ap.name, Turn: turn, Reason: reason,
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
