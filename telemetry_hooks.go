package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/swarmrt/swarm/model"
)

// The engine's side of OpenTelemetry (package telemetry is the public
// face): spans after the GenAI semantic conventions and the GenAI client
// metrics. With neither Config.TracerProvider nor Config.MeterProvider set,
// rt.tel is nil and every hook returns at once.

const instrumentation = "github.com/swarmrt/swarm"

// tel holds the runtime's tracer and instruments.
type tel struct {
	tracer   trace.Tracer // nil: no spans
	content  bool
	tokens   metric.Int64Histogram // nil: no metrics
	duration metric.Float64Histogram
	runs     metric.Int64Counter
}

func newTel(cfg Config) (*tel, error) {
	if cfg.TracerProvider == nil && cfg.MeterProvider == nil {
		return nil, nil
	}
	t := &tel{content: cfg.CaptureContent}
	if cfg.TracerProvider != nil {
		t.tracer = cfg.TracerProvider.Tracer(instrumentation)
	}
	if mp := cfg.MeterProvider; mp != nil {
		m := mp.Meter(instrumentation)
		var err error
		if t.tokens, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
			metric.WithDescription("Number of input and output tokens used."),
			metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)); err != nil {
			return nil, err
		}
		if t.duration, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
			metric.WithDescription("GenAI operation duration."),
			metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)); err != nil {
			return nil, err
		}
		if t.runs, err = m.Int64Counter("swarm.runs", metric.WithUnit("{run}"),
			metric.WithDescription("Runs that reached a state (completed, failed, stopped, paused), by state and swarm.")); err != nil {
			return nil, err
		}
	}
	return t, nil
}

var traceContext propagation.TraceContext

// traceparent is the W3C traceparent of the span in ctx, or "".
func traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c["traceparent"]
}

// providerOf is the gen_ai.provider.name of a model spec ("openai:gpt-4o").
func providerOf(spec string) (provider, name string) {
	if p, n, ok := strings.Cut(spec, ":"); ok {
		return p, n
	}
	return "", spec
}

// agentAttrs are the attributes of the invoke_agent span of the agent
// named name (id: its unique id) whose model is modelSpec, in run id.
func agentAttrs(name, id, modelSpec, run string) []attribute.KeyValue {
	provider, _ := providerOf(modelSpec)
	return []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.provider.name", provider),
		attribute.String("gen_ai.agent.id", id),
		attribute.String("gen_ai.agent.name", name),
		attribute.String("gen_ai.conversation.id", run),
	}
}

// startRunSpan starts the invoke_agent span of a run of info with plan p
// in ctx (a new run: its parent is the caller's span, if any) and returns
// the traceparent to journal with the run.
func (t *tel) startRunSpan(ctx context.Context, info *defInfo, p *plan, id string) (trace.Span, string) {
	if t == nil || t.tracer == nil {
		return nil, ""
	}
	_, span := t.tracer.Start(ctx, "invoke_agent "+info.id, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		append(agentAttrs(info.id, info.id, p.root.modelSpec, id), attribute.String("gen_ai.agent.description", info.description))...,
	))
	return span, traceparent(trace.ContextWithSpan(ctx, span))
}

// tel is the runtime's telemetry, or nil when it is off or the runner is
// an inspection's replay (inspect.go), which no span or metric may count.
func (r *runner) tel() *tel {
	if r.inspect != nil {
		return nil
	}
	return r.rt.tel
}

// runContext puts the run's span in ctx: the one started with the run, or,
// for a later drive (a run recovered after a crash, resumed, or taken over
// after a release), a new invoke_agent span. That span starts a trace of
// its own with a link to the journaled trace context, not a child of it:
// the first drive's span may never have been exported (its process was
// killed), and a parent that no backend has would leave the recovered
// drive dangling.
func (r *runner) runContext(ctx context.Context) context.Context {
	t := r.tel()
	if t == nil || t.tracer == nil {
		return ctx
	}
	if r.span == nil {
		opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
			append(agentAttrs(r.info.id, r.info.id, r.plan.root.modelSpec, r.id), attribute.Bool("swarm.run.resumed", true))...,
		)}
		first := trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": r.trace}))
		if first.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: first}))
		}
		_, r.span = t.tracer.Start(ctx, "invoke_agent "+r.info.id, opts...)
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
	if t.runs != nil && state != "" {
		t.runs.Add(context.Background(), 1, metric.WithAttributes(attribute.String("swarm.run.state", state), attribute.String("gen_ai.agent.name", r.info.id)))
	}
	if r.span == nil {
		return
	}
	if state != "" {
		r.span.SetAttributes(attribute.String("swarm.run.state", state))
	}
	if out.kind == failed {
		r.span.SetStatus(codes.Error, out.reason)
	} else if err != nil {
		r.span.SetStatus(codes.Error, err.Error())
	}
	r.span.End()
	r.span = nil
}

// traceAgent starts the invoke_agent span of the agent of plan ap that a
// handoff runs.
func (r *runner) traceAgent(ctx context.Context, ap *agentPlan) (context.Context, func(outcome)) {
	t := r.tel()
	if t == nil || t.tracer == nil {
		return ctx, func(outcome) {}
	}
	ctx, span := t.tracer.Start(ctx, "invoke_agent "+ap.name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		agentAttrs(ap.name, ap.name, ap.modelSpec, r.id)...,
	))
	return ctx, func(out outcome) {
		if out.kind == failed {
			span.SetStatus(codes.Error, out.reason)
		}
		span.End()
	}
}

// traceChat starts the chat span of a model request of ap and returns the
// function that ends it with the response (and records the metrics).
func (r *runner) traceChat(ctx context.Context, ap *agentPlan, req *model.Request) (context.Context, func(*model.Response, error)) {
	t := r.tel()
	if t == nil {
		return ctx, func(*model.Response, error) {}
	}
	provider, name := providerOf(ap.modelSpec)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", provider),
		attribute.String("gen_ai.request.model", name),
	}
	start := time.Now()
	var span trace.Span
	if t.tracer != nil {
		spanName := "chat"
		if name != "" {
			spanName += " " + name
		}
		ctx, span = t.tracer.Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		span.SetAttributes(attribute.String("gen_ai.agent.name", ap.name), attribute.String("gen_ai.conversation.id", r.id))
		if t.content {
			span.SetAttributes(attribute.String("gen_ai.system_instructions", ap.system), attribute.String("gen_ai.input.messages", jsonText(req.Messages)))
		}
	}
	return ctx, func(resp *model.Response, err error) {
		mattrs := metric.WithAttributes(append(attrs, attribute.String("gen_ai.agent.name", ap.name))...)
		if t.duration != nil {
			t.duration.Record(context.Background(), time.Since(start).Seconds(), mattrs)
		}
		if resp != nil && t.tokens != nil {
			t.tokens.Record(context.Background(), resp.Usage.InputTokens, mattrs, metric.WithAttributes(attribute.String("gen_ai.token.type", "input")))
			t.tokens.Record(context.Background(), resp.Usage.OutputTokens, mattrs, metric.WithAttributes(attribute.String("gen_ai.token.type", "output")))
		}
		if span == nil {
			return
		}
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(attribute.String("error.type", string(model.KindOf(err))))
		}
		if resp != nil {
			span.SetAttributes(
				attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
				attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.OutputTokens),
			)
			if resp.FinishReason != "" {
				span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{resp.FinishReason}))
			}
			if resp.ID != "" {
				span.SetAttributes(attribute.String("gen_ai.response.id", resp.ID))
			}
			if resp.Model != "" {
				span.SetAttributes(attribute.String("gen_ai.response.model", resp.Model))
			}
			if t.content {
				span.SetAttributes(attribute.String("gen_ai.output.messages", jsonText([]model.Message{resp.Message})))
			}
		}
		span.End()
	}
}

// traceTool starts the execute_tool span of call c of ap.
func (r *runner) traceTool(ctx context.Context, ap *agentPlan, c model.ToolCall) (context.Context, func(callResult)) {
	t := r.tel()
	if t == nil || t.tracer == nil {
		return ctx, func(callResult) {}
	}
	ctx, span := t.tracer.Start(ctx, "execute_tool "+c.Name, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", c.Name),
		// The runtime executes every tool the model calls (a handoff is
		// one too): a function in the conventions' terms.
		attribute.String("gen_ai.tool.type", "function"),
		attribute.String("gen_ai.tool.call.id", c.ID),
		attribute.String("gen_ai.agent.name", ap.name),
		attribute.String("gen_ai.conversation.id", r.id),
	))
	if t.content {
		span.SetAttributes(attribute.String("gen_ai.tool.call.arguments", string(c.Arguments)))
	}
	return ctx, func(res callResult) {
		switch {
		case res.err != nil:
			span.SetStatus(codes.Error, res.err.Error())
		case res.abort != "":
			span.SetStatus(codes.Error, res.abort)
		case res.isError:
			span.SetStatus(codes.Error, "tool error")
			span.SetAttributes(attribute.String("error.type", "tool_error"))
		}
		if t.content && res.err == nil {
			span.SetAttributes(attribute.String("gen_ai.tool.call.result", res.output))
		}
		span.End()
	}
}

// traceGuard starts an apply_guardrail span; the returned function ends it
// with the verdict.
func (r *runner) traceGuard(ctx context.Context, g *Guardrail, c GuardCheck) (context.Context, func(Verdict)) {
	t := r.tel()
	if t == nil || t.tracer == nil {
		return ctx, func(Verdict) {}
	}
	ctx, span := t.tracer.Start(ctx, "apply_guardrail "+g.Name, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "apply_guardrail"),
		attribute.String("gen_ai.guardrail.policy.id", g.Name),
		attribute.String("gen_ai.guardrail.component.name", string(c.Point)),
		attribute.String("gen_ai.agent.name", c.Agent),
		attribute.String("gen_ai.conversation.id", r.id),
	))
	return ctx, func(v Verdict) {
		span.SetAttributes(attribute.String("gen_ai.guardrail.result.type", string(v.Action)))
		if v.Message != "" {
			span.SetAttributes(attribute.String("gen_ai.guardrail.result.value", v.Message))
		}
		span.End()
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
