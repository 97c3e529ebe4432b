package memory

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The memory operations of the OpenTelemetry GenAI conventions
// (gen_ai.operation.name).
const (
	opSearch = "search_memory"
	opUpdate = "update_memory"
	opDelete = "delete_memory"
)

const instrumentation = "github.com/swarmrt/swarm/memory"

// startSpan starts a span "<op> <bank>" under the span in ctx, with the
// tracer provider of that span (none: no span is recorded). end finishes
// it with the operation's error and, for a search (n >= 0), the number of
// results.
func startSpan(ctx context.Context, op, bank, key string) (context.Context, func(err error, n int)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, func(error, int) {}
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", op),
		attribute.String("gen_ai.memory.store.name", bank),
		attribute.String("gen_ai.memory.type", "long_term"),
	}
	if scope, _, ok := strings.Cut(bank, ":"); ok {
		attrs = append(attrs, attribute.String("gen_ai.memory.scope", scope))
	}
	if key != "" {
		attrs = append(attrs, attribute.String("gen_ai.memory.id", key))
	}
	ctx, span := parent.TracerProvider().Tracer(instrumentation).Start(ctx, op+" "+bank,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, func(err error, n int) {
		if n >= 0 {
			span.SetAttributes(attribute.Int("gen_ai.memory.search.result.count", n))
		}
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(attribute.String("error.type", "memory_error"))
		}
		span.End()
	}
}
