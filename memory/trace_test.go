package memory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	storemem "github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// TestSpans checks that memory operations are traced as the GenAI
// conventions' search_memory and update_memory spans, each a child of
// its tool call's execute_tool span, through the runtime's tracer provider.
func TestSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	st := storemem.New()
	def, _ := support(st)
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(supportScript), TracerProvider: tp, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	if _, _, err := def.Run(swarmtest.Context(t), rt, "hi", swarm.WithValues(map[string]any{"user": "fay"})); err != nil {
		t.Fatal(err)
	}
	byID := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byID[s.SpanContext.SpanID().String()] = s
	}
	found := map[string]bool{}
	for _, s := range exp.GetSpans() {
		op, bank, _ := strings.Cut(s.Name, " ")
		if op != "search_memory" && op != "update_memory" {
			continue
		}
		attrs := map[string]string{}
		for _, a := range s.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		if bank != "user:fay" || attrs["gen_ai.operation.name"] != op || attrs["gen_ai.memory.store.name"] != "user:fay" ||
			attrs["gen_ai.memory.scope"] != "user" {
			t.Errorf("span %q has attributes %v", s.Name, attrs)
		}
		parent := byID[s.Parent.SpanID().String()]
		if !strings.HasPrefix(parent.Name, "execute_tool memory_") {
			t.Errorf("span %q is a child of %q, want an execute_tool span", s.Name, parent.Name)
		}
		found[op] = true
	}
	if !found["search_memory"] || !found["update_memory"] {
		t.Fatalf("memory spans found: %v", found)
	}
}
