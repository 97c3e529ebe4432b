package swarm

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/telemetry/genai"
)

// The engine's side of OpenTelemetry (package telemetry is the public
// face; telemetry/genai makes the spans and metrics): what a runner knows
// of its run, handed over as names, ids and outcomes. With neither
// Config.TracerProvider nor Config.MeterProvider set, rt.tel is nil and
// every hook returns at once.
//
// The hooks cannot be written on the public Hooks: a chat span must be
// the parent of the model call's own spans (its HTTP request), and Hooks
// see neither model calls nor the start of a step.

// tel is a runtime's telemetry.
type tel struct{ g *genai.Tel }

func newTel(cfg Config) (*tel, error) {
	g, err := genai.New(cfg.TracerProvider, cfg.MeterProvider, cfg.CaptureContent)
	if g == nil || err != nil {
		return nil, err
	}
	return &tel{g: g}, nil
}

// startRunSpan starts the invoke_agent span of a run of info with plan p
// in ctx (a new run: its parent is the caller's span, if any) and returns
// the traceparent to journal with the run.
func (t *tel) startRunSpan(ctx context.Context, info *defInfo, p *plan, id string) (trace.Span, string) {
	if t == nil {
		return nil, ""
	}
	return t.g.StartRun(ctx, info.id, info.description, p.root.modelSpec, id)
}

// tel is the runtime's telemetry, or nil when it is off or the runner is
// an inspection's replay (inspect.go), which no span or metric may count.
func (r *runner) tel() *genai.Tel {
	if r.inspect != nil || r.rt.tel == nil {
		return nil
	}
	return r.rt.tel.g
}

// runContext puts the run's span in ctx: the one started with the run, or,
// for a later drive, a new one linked to the journaled trace context.
func (r *runner) runContext(ctx context.Context) context.Context {
	t := r.tel()
	if !t.Tracing() {
		return ctx
	}
	if r.span == nil {
		r.span = t.ResumeRun(ctx, r.info.id, r.plan.root.modelSpec, r.id, r.trace)
	}
	return trace.ContextWithSpan(ctx, r.span)
}

// endRun ends the run's span and counts the state the run reached.
func (r *runner) endRun(ctx context.Context, out outcome, err error) {
	t := r.tel()
	if t == nil {
		return
	}
	state := ""
	switch out.kind {
	case completed:
		state = "completed"
	case failed:
		state = "failed"
	case paused:
		state = "paused"
	case interrupted:
		var sc *stopCause
		if errors.As(out.err, &sc) || errors.As(context.Cause(ctx), &sc) {
			state = "stopped"
		}
	}
	if err != nil {
		state = ""
	}
	t.EndRun(r.span, r.info.id, state, out.kind == failed, out.reason, err)
	r.span = nil
}

// traceAgent starts the invoke_agent span of the agent of plan ap that a
// handoff runs.
func (r *runner) traceAgent(ctx context.Context, ap *agentPlan) (context.Context, func(outcome)) {
	t := r.tel()
	if !t.Tracing() {
		return ctx, func(outcome) {} // allocates nothing
	}
	ctx, end := t.Agent(ctx, ap.name, ap.modelSpec, r.id)
	return ctx, func(out outcome) { end(out.kind == failed, out.reason) }
}

// traceChat starts the chat span of a model request of ap and returns the
// function that ends it with the response (and records the metrics).
func (r *runner) traceChat(ctx context.Context, ap *agentPlan, req *model.Request) (context.Context, func(*model.Response, error)) {
	return r.tel().Chat(ctx, ap.name, ap.modelSpec, ap.system, r.id, req)
}

// traceTool starts the execute_tool span of call c of ap.
func (r *runner) traceTool(ctx context.Context, ap *agentPlan, c model.ToolCall) (context.Context, func(callResult)) {
	t := r.tel()
	if !t.Tracing() {
		return ctx, func(callResult) {}
	}
	ctx, end := t.Tool(ctx, ap.name, r.id, c)
	return ctx, func(res callResult) {
		end(genai.ToolEnd{Err: res.err, Abort: res.abort, IsError: res.isError, Output: res.output})
	}
}

// traceGuard starts an apply_guardrail span; the returned function ends it
// with the verdict.
func (r *runner) traceGuard(ctx context.Context, g *guardrail.Guardrail, c guardrail.Check) (context.Context, func(guardrail.Verdict)) {
	t := r.tel()
	if !t.Tracing() {
		return ctx, func(guardrail.Verdict) {}
	}
	ctx, end := t.Guard(ctx, g.Name, string(c.Point), c.Agent, r.id)
	return ctx, func(v guardrail.Verdict) { end(string(v.Action), v.Message) }
}

// providerOf splits a model spec into its provider and model name.
var providerOf = genai.ProviderOf
