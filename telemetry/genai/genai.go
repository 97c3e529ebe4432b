// Package genai makes the OpenTelemetry spans and metrics of runs after the
// GenAI semantic conventions: invoke_agent (a drive of a run, an agent a
// handoff runs), chat (a model call), execute_tool and apply_guardrail
// spans, and the GenAI client metrics (gen_ai.client.token.usage,
// gen_ai.client.operation.duration) with the swarm.runs counter. The
// engine calls it with names, ids and outcomes; it knows nothing of runs.
// Package telemetry sets up the providers it records into.
//
// A nil *Tel is off: every method of it returns at once.
package genai

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/swarmrt/swarm/model"
)

const instrumentation = "github.com/swarmrt/swarm"

// Tel holds a runtime's tracer and instruments.
type Tel struct {
	tracer   trace.Tracer // nil: no spans
	content  bool
	tokens   metric.Int64Histogram // nil: no metrics
	duration metric.Float64Histogram
	runs     metric.Int64Counter
}

// New makes the instrumentation of a runtime, nil when tp and mp are both
// nil. content puts message content on spans.
func New(tp trace.TracerProvider, mp metric.MeterProvider, content bool) (*Tel, error) {
	if tp == nil && mp == nil {
		return nil, nil
	}
	t := &Tel{content: content}
	if tp != nil {
		t.tracer = tp.Tracer(instrumentation)
	}
	if mp != nil {
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

// Tracing reports whether t makes spans.
func (t *Tel) Tracing() bool { return t != nil && t.tracer != nil }

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

// ProviderOf splits a model spec ("openai:gpt-4o") into its provider,
// the gen_ai.provider.name, and its model name.
func ProviderOf(spec string) (provider, name string) {
	if p, n, ok := strings.Cut(spec, ":"); ok {
		return p, n
	}
	return "", spec
}

// agentAttrs are the attributes of the invoke_agent span of the agent
// named name (id: its unique id) whose model is modelSpec, in run id.
func agentAttrs(name, id, modelSpec, run string) []attribute.KeyValue {
	provider, _ := ProviderOf(modelSpec)
	return []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.provider.name", provider),
		attribute.String("gen_ai.agent.id", id),
		attribute.String("gen_ai.agent.name", name),
		attribute.String("gen_ai.conversation.id", run),
	}
}

// StartRun starts the invoke_agent span of a new run of the swarm swarmID
// (its orchestrator's model is modelSpec) in ctx (its parent is the
// caller's span, if any) and returns the traceparent to journal with the
// run.
func (t *Tel) StartRun(ctx context.Context, swarmID, description, modelSpec, run string) (trace.Span, string) {
	if !t.Tracing() {
		return nil, ""
	}
	_, span := t.tracer.Start(ctx, "invoke_agent "+swarmID, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		append(agentAttrs(swarmID, swarmID, modelSpec, run), attribute.String("gen_ai.agent.description", description))...,
	))
	return span, traceparent(trace.ContextWithSpan(ctx, span))
}

// ResumeRun starts the invoke_agent span of a later drive of a run (one
// recovered after a crash, resumed, or taken over after a release): a
// span that starts a trace of its own with a link to the journaled trace
// context first, not a child of it: the first drive's span may never have
// been exported (its process was killed), and a parent that no backend
// has would leave the recovered drive dangling.
func (t *Tel) ResumeRun(ctx context.Context, swarmID, modelSpec, run, first string) trace.Span {
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		append(agentAttrs(swarmID, swarmID, modelSpec, run), attribute.Bool("swarm.run.resumed", true))...,
	)}
	fsc := trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": first}))
	if fsc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: fsc}))
	}
	_, span := t.tracer.Start(ctx, "invoke_agent "+swarmID, opts...)
	return span
}

// EndRun counts the state a run of swarmID reached ("" for none: the
// drive ended without one) and ends its span (nil: none): an error, if
// the run failed, with the reason, or else with err when the drive itself
// failed.
func (t *Tel) EndRun(span trace.Span, swarmID, state string, failed bool, reason string, err error) {
	if t == nil {
		return
	}
	if t.runs != nil && state != "" {
		t.runs.Add(context.Background(), 1, metric.WithAttributes(attribute.String("swarm.run.state", state), attribute.String("gen_ai.agent.name", swarmID)))
	}
	if span == nil {
		return
	}
	if state != "" {
		span.SetAttributes(attribute.String("swarm.run.state", state))
	}
	if failed {
		span.SetStatus(codes.Error, reason)
	} else if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Agent starts the invoke_agent span of the agent that a handoff runs;
// the returned function ends it, an error with the reason if the agent
// failed.
func (t *Tel) Agent(ctx context.Context, name, modelSpec, run string) (context.Context, func(failed bool, reason string)) {
	if !t.Tracing() {
		return ctx, func(bool, string) {}
	}
	ctx, span := t.tracer.Start(ctx, "invoke_agent "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		agentAttrs(name, name, modelSpec, run)...,
	))
	return ctx, func(failed bool, reason string) {
		if failed {
			span.SetStatus(codes.Error, reason)
		}
		span.End()
	}
}

// Chat starts the chat span of request req of the agent named agent
// (whose model is modelSpec and system prompt system) and returns the
// function that ends it with the response (and records the metrics).
func (t *Tel) Chat(ctx context.Context, agent, modelSpec, system, run string, req *model.Request) (context.Context, func(*model.Response, error)) {
	if t == nil {
		return ctx, func(*model.Response, error) {}
	}
	provider, name := ProviderOf(modelSpec)
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
		span.SetAttributes(attribute.String("gen_ai.agent.name", agent), attribute.String("gen_ai.conversation.id", run))
		if t.content {
			span.SetAttributes(attribute.String("gen_ai.system_instructions", system), attribute.String("gen_ai.input.messages", jsonText(req.Messages)))
		}
	}
	return ctx, func(resp *model.Response, err error) {
		mattrs := metric.WithAttributes(append(attrs, attribute.String("gen_ai.agent.name", agent))...)
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

// ToolEnd is how a tool call ended: Err when it did not (the run was
// interrupted), Abort when a guardrail stopped the run, IsError for an
// error result, Output its result.
type ToolEnd struct {
	Err     error
	Abort   string
	IsError bool
	Output  string
}

// Tool starts the execute_tool span of call c of the agent named agent;
// the returned function ends it.
func (t *Tel) Tool(ctx context.Context, agent, run string, c model.ToolCall) (context.Context, func(ToolEnd)) {
	if !t.Tracing() {
		return ctx, func(ToolEnd) {}
	}
	ctx, span := t.tracer.Start(ctx, "execute_tool "+c.Name, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", c.Name),
		// The runtime executes every tool the model calls (a handoff is
		// one too): a function in the conventions' terms.
		attribute.String("gen_ai.tool.type", "function"),
		attribute.String("gen_ai.tool.call.id", c.ID),
		attribute.String("gen_ai.agent.name", agent),
		attribute.String("gen_ai.conversation.id", run),
	))
	if t.content {
		span.SetAttributes(attribute.String("gen_ai.tool.call.arguments", string(c.Arguments)))
	}
	return ctx, func(res ToolEnd) {
		switch {
		case res.Err != nil:
			span.SetStatus(codes.Error, res.Err.Error())
		case res.Abort != "":
			span.SetStatus(codes.Error, res.Abort)
		case res.IsError:
			span.SetStatus(codes.Error, "tool error")
			span.SetAttributes(attribute.String("error.type", "tool_error"))
		}
		if t.content && res.Err == nil {
			span.SetAttributes(attribute.String("gen_ai.tool.call.result", res.Output))
		}
		span.End()
	}
}

// Guard starts the apply_guardrail span of the guardrail named name at
// point of the agent named agent; the returned function ends it with the
// verdict's action and message.
func (t *Tel) Guard(ctx context.Context, name, point, agent, run string) (context.Context, func(action, message string)) {
	if !t.Tracing() {
		return ctx, func(string, string) {}
	}
	ctx, span := t.tracer.Start(ctx, "apply_guardrail "+name, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "apply_guardrail"),
		attribute.String("gen_ai.guardrail.policy.id", name),
		attribute.String("gen_ai.guardrail.component.name", point),
		attribute.String("gen_ai.agent.name", agent),
		attribute.String("gen_ai.conversation.id", run),
	))
	return ctx, func(action, message string) {
		span.SetAttributes(attribute.String("gen_ai.guardrail.result.type", action))
		if message != "" {
			span.SetAttributes(attribute.String("gen_ai.guardrail.result.value", message))
		}
		span.End()
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
