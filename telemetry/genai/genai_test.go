package genai_test

import (
	"context"
	"errors"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/telemetry/genai"
)

// A runtime without providers has no instrumentation, and every method of
// the nil *Tel returns at once with the context it was given.
func TestNilIsOff(t *testing.T) {
	tel, err := genai.New(nil, nil, false)
	if tel != nil || err != nil {
		t.Fatalf("New(nil, nil) = %v, %v; want nil", tel, err)
	}
	ctx := context.Background()
	if tel.Tracing() {
		t.Error("a nil Tel traces")
	}
	if span, tp := tel.StartRun(ctx, "s", "", "", "r"); span != nil || tp != "" {
		t.Errorf("StartRun = %v, %q", span, tp)
	}
	c, end := tel.Chat(ctx, "a", "openai:gpt-4o", "", "r", &model.Request{})
	end(&model.Response{}, nil)
	c2, endTool := tel.Tool(c, "a", "r", model.ToolCall{Name: "f"})
	endTool(genai.ToolEnd{})
	c3, endAgent := tel.Agent(c2, "a", "", "r")
	endAgent(true, "failed")
	c4, endGuard := tel.Guard(c3, "g", "input", "a", "r")
	endGuard("allow", "")
	tel.EndRun(nil, "s", "completed", false, "", nil)
	if c4 != ctx {
		t.Error("a nil Tel changed the context")
	}
}

// A chat span is the parent of what the model call does in its context,
// names the model and the agent, and records the token metrics; a failed
// run's span is an error with its reason.
func TestChatAndRun(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	tel, err := genai.New(tp, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), false)
	if err != nil {
		t.Fatal(err)
	}
	run, traceparent := tel.StartRun(context.Background(), "support", "Answers", "openai:gpt-4o", "run-1")
	if traceparent == "" {
		t.Fatal("no traceparent for a new run")
	}
	ctx, end := tel.Chat(context.Background(), "triage", "openai:gpt-4o", "Be brief.", "run-1", &model.Request{})
	end(&model.Response{Usage: model.Usage{InputTokens: 10, OutputTokens: 3}}, nil)
	tel.EndRun(run, "support", "failed", true, "gave up", errors.New("ignored: the run failed"))
	got := spans.GetSpans()
	if len(got) != 2 || got[0].Name != "chat gpt-4o" || got[1].Name != "invoke_agent support" {
		t.Fatalf("spans %v", got)
	}
	if got[1].Status.Description != "gave up" {
		t.Errorf("run span status %+v, want the failure's reason", got[1].Status)
	}
	if !got[0].SpanContext.Equal(trace.SpanContextFromContext(ctx)) {
		t.Error("the chat's context does not carry its span")
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names[m.Name] = true
		}
	}
	for _, n := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "swarm.runs"} {
		if !names[n] {
			t.Errorf("no metric %s in %v", n, names)
		}
	}
}
