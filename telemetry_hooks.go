package swarm

import "context"

// traceGuard starts an apply_guardrail span; the returned function ends it
// with the verdict.
func (r *runner) traceGuard(ctx context.Context, g *Guardrail, c GuardCheck) (context.Context, func(Verdict)) {
	return ctx, func(Verdict) {}
}
