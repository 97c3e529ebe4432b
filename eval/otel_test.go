package eval

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
)

// TestEmitScores: each score of a case becomes a gen_ai.evaluation.result
// event with its name, value, label and explanation, on a span whose
// parent is the span of the evaluated run (read from the run's journal),
// in the run's trace.
func TestEmitScores(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)
	rt, err := swarm.New(swarm.Config{Model: scripted.New(scripted.Script{"desk": {scripted.Text("Refunded order 42.")}}), ModelSpec: "scripted:demo", TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	desk := swarm.Define[string, string]("desk", "answers customers", func(string) swarm.Spec { return swarm.Spec{} })
	if err := rt.Register(desk); err != nil {
		t.Fatal(err)
	}
	_, run, err := desk.Run(ctx, rt, "refund order 42")
	if err != nil {
		t.Fatal(err)
	}
	var runSpan sdktrace.ReadOnlySpan
	for _, s := range spans.GetSpans().Snapshots() {
		if s.Name() == "invoke_agent desk" {
			runSpan = s
		}
	}
	if runSpan == nil {
		t.Fatalf("no run span in %d spans", len(spans.GetSpans()))
	}
	spans.Reset()

	r := &Report{Set: "support", RunID: "eval-1", Config: "a.yaml", Cases: []CaseResult{
		{Case: "refund", Observed: Observed{RunID: run.ID()}, Pass: false, Scores: []Score{
			{Name: "output", Value: 1, Threshold: 1, Pass: true},
			{Name: "polite", Value: 0.25, Threshold: 0.5, Label: "curt", Explanation: "no greeting"},
		}},
		{Case: "untraced", Observed: Observed{RunID: "never-ran"}, Error: "judge failed", Scores: []Score{{Name: "tone", Error: "malformed"}}},
	}}
	if err := EmitScores(ctx, tp, rt, r); err != nil {
		t.Fatal(err)
	}
	got := spans.GetSpans().Snapshots()
	if len(got) != 2 {
		t.Fatalf("%d spans, want one per case", len(got))
	}
	ev := got[0]
	if ev.Name() != "evaluate refund" || ev.Parent().SpanID() != runSpan.SpanContext().SpanID() || ev.SpanContext().TraceID() != runSpan.SpanContext().TraceID() {
		t.Errorf("span %q parent %s trace %s, want a child of the run's span %s in trace %s", ev.Name(), ev.Parent().SpanID(), ev.SpanContext().TraceID(),
			runSpan.SpanContext().SpanID(), runSpan.SpanContext().TraceID())
	}
	want := []map[attribute.Key]attribute.Value{
		{"gen_ai.evaluation.name": attribute.StringValue("output"), "gen_ai.evaluation.score.value": attribute.Float64Value(1), "gen_ai.evaluation.score.label": attribute.StringValue("pass")},
		{"gen_ai.evaluation.name": attribute.StringValue("polite"), "gen_ai.evaluation.score.value": attribute.Float64Value(0.25), "gen_ai.evaluation.score.label": attribute.StringValue("curt"),
			"gen_ai.evaluation.explanation": attribute.StringValue("no greeting")},
	}
	if len(ev.Events()) != len(want) {
		t.Fatalf("%d events, want %d", len(ev.Events()), len(want))
	}
	for i, e := range ev.Events() {
		if e.Name != "gen_ai.evaluation.result" {
			t.Errorf("event %d is %q", i, e.Name)
		}
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range e.Attributes {
			attrs[kv.Key] = kv.Value
		}
		for k, v := range want[i] {
			if attrs[k] != v {
				t.Errorf("event %d: %s = %v, want %v", i, k, attrs[k].Emit(), v.Emit())
			}
		}
	}
	if _, ok := attrsOf(ev.Attributes())["gen_ai.conversation.id"]; !ok {
		t.Error("span without gen_ai.conversation.id")
	}
	// A run the store does not hold has no trace: its span is a root of
	// its own, still with the events and the case's error.
	un := got[1]
	if un.Parent().IsValid() || len(un.Events()) != 1 || un.Status().Description != "judge failed" {
		t.Errorf("untraced case: parent %v, %d events, status %+v", un.Parent(), len(un.Events()), un.Status())
	}
	if l := attrsOf(un.Events()[0].Attributes)["gen_ai.evaluation.score.label"]; l.AsString() != "error" {
		t.Errorf("a score that could not be scored is labelled %q", l.AsString())
	}
}

func attrsOf(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}
