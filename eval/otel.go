package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
)

// This file reports scores to OpenTelemetry as the GenAI semantic
// conventions ask: each score a gen_ai.evaluation.result event, parented
// to the span of the run it evaluates.
//
// A case's run has ended (its invoke_agent span with it) before its
// scores exist, and a span cannot take events once ended. So each case
// gets a short span of its own, "evaluate {case}", whose parent is the
// evaluated run's span context as the run journaled it (its started
// event's traceparent): in a trace viewer the span and its events sit
// under the run's invoke_agent span. A run traced by no one (telemetry
// was off when it ran) has no context to journal; its case's span is then
// a root, found by gen_ai.conversation.id (the run id).

// EvaluationEvent is the name of the event each score becomes.
const EvaluationEvent = "gen_ai.evaluation.result"

var traceContext propagation.TraceContext

// EmitScores reports the scores of r's cases to tp: a span per case
// parented to its run's span, holding a gen_ai.evaluation.result event
// per score (gen_ai.evaluation.name, gen_ai.evaluation.score.value,
// gen_ai.evaluation.score.label, gen_ai.evaluation.explanation). The runs'
// trace contexts are read from rt's store. A nil tp reports nothing.
func EmitScores(ctx context.Context, tp trace.TracerProvider, rt *swarm.Runtime, r *Report) error {
	if tp == nil || r == nil {
		return nil
	}
	tracer := tp.Tracer("github.com/swarmrt/swarm/eval")
	for _, c := range r.Cases {
		parent := context.Background()
		if id := c.Observed.RunID; id != "" && rt != nil {
			traceparent, err := runTrace(ctx, rt, id)
			if err != nil {
				return fmt.Errorf("eval: trace of run %s: %w", id, err)
			}
			if traceparent != "" {
				parent = traceContext.Extract(parent, propagation.MapCarrier{"traceparent": traceparent})
			}
		}
		emitCase(parent, tracer, r, c)
	}
	return nil
}

// emitCase makes case c's span under the span context in parent.
func emitCase(parent context.Context, tracer trace.Tracer, r *Report, c CaseResult) {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "evaluate"),
		attribute.String("gen_ai.conversation.id", c.Observed.RunID),
		attribute.String("swarm.eval.set", r.Set),
		attribute.String("swarm.eval.case", c.Case),
		attribute.String("swarm.eval.run", r.RunID),
		attribute.String("swarm.eval.verdict", c.Verdict()),
	}
	if r.Config != "" {
		attrs = append(attrs, attribute.String("swarm.eval.config", r.Config))
	}
	_, span := tracer.Start(parent, "evaluate "+c.Case, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	for _, s := range c.Scores {
		ev := []attribute.KeyValue{
			attribute.String("gen_ai.evaluation.name", s.Name),
			attribute.Float64("gen_ai.evaluation.score.value", s.Value),
			attribute.String("gen_ai.evaluation.score.label", scoreLabel(s)),
		}
		if s.Explanation != "" {
			ev = append(ev, attribute.String("gen_ai.evaluation.explanation", s.Explanation))
		}
		if s.Error != "" {
			ev = append(ev, attribute.String("error.type", "scorer_error"), attribute.String("swarm.eval.error", s.Error))
		}
		span.AddEvent(EvaluationEvent, trace.WithAttributes(ev...))
	}
	if c.Error != "" {
		span.SetStatus(codes.Error, c.Error)
	}
	span.End()
}

// scoreLabel is a score's label, or its verdict when the scorer gave
// none.
func scoreLabel(s Score) string {
	switch {
	case s.Label != "":
		return s.Label
	case s.Error != "":
		return "error"
	case s.Pass:
		return "pass"
	}
	return "fail"
}

// runTrace is the traceparent run id journaled when it started ("" when
// it was not traced).
func runTrace(ctx context.Context, rt *swarm.Runtime, id string) (string, error) {
	recs, err := rt.Store().Read(ctx, id, 0, 1)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil // deleted since: no trace to join
	}
	if err != nil || len(recs) == 0 {
		return "", err
	}
	var ev struct {
		Trace string `json:"trace"`
	}
	if err := json.Unmarshal(recs[0].Data, &ev); err != nil {
		return "", err
	}
	return ev.Trace, nil
}
