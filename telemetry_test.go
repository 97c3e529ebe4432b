package swarm_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// traced is the scripted run of the span tests: a tool (checked by a
// guardrail), a handoff to an agent and a handoff to a child swarm.
func traced() (*swarm.Swarm[string, string], scripted.Script) {
	book := swarm.NewTool("book", "books", func(context.Context, struct{}) (string, error) { return "booked", nil })
	audit := guardrail.Guardrail{Name: "audit", Points: []guardrail.Point{guardrail.ToolCall}, Check: func(context.Context, guardrail.Check) (guardrail.Verdict, error) {
		return guardrail.Verdict{Action: guardrail.Allow}, nil
	}}
	packing := swarm.Define[string, string]("packing", "packs bags", func(string) swarm.Spec { return swarm.Spec{Instructions: "pack"} })
	helper := &swarm.Agent{Name: "weather", Description: "forecasts", Instructions: "forecast"}
	trip := swarm.Define[string, string]("trip", "plans trips", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{book}, Handoffs: []swarm.Handoff{swarm.ToAgent(helper), swarm.ToSwarm(packing)}, Guardrails: []guardrail.Guardrail{audit}}
	})
	script := scripted.Script{
		"trip": {
			scripted.Tools(scripted.ToolCall{ID: "c1", Name: "book", Arguments: map[string]any{}}),
			scripted.Tools(scripted.ToolCall{ID: "c2", Name: "handoff_to_weather", Arguments: map[string]any{"request": "forecast"}}),
			scripted.Tools(scripted.ToolCall{ID: "c3", Name: "handoff_to_packing", Arguments: map[string]any{"request": "pack"}}),
			scripted.Text("done"),
		},
		"weather": {scripted.Text("sunny")},
		"packing": {scripted.Text("packed")},
	}
	return trip, script
}

// spanTree renders spans as an indented tree of names with a few
// attributes, children sorted by start time.
func spanTree(spans tracetest.SpanStubs) string {
	kids := map[string][]tracetest.SpanStub{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID().String()] = true
	}
	for _, s := range spans {
		p := s.Parent.SpanID().String()
		if !ids[p] {
			p = "root"
		}
		kids[p] = append(kids[p], s)
	}
	var b strings.Builder
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		cs := kids[id]
		slices.SortStableFunc(cs, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
		for _, s := range cs {
			fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.Name)
			for _, kv := range s.Attributes {
				switch kv.Key {
				case "gen_ai.agent.name", "gen_ai.tool.call.id", "gen_ai.guardrail.result.type", "swarm.run.resumed", "swarm.run.state":
					fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.Emit())
				}
			}
			b.WriteByte('\n')
			walk(s.SpanContext.SpanID().String(), depth+1)
		}
	}
	walk("root", 0)
	return b.String()
}

func tracingRuntime(t *testing.T, exp sdktrace.SpanExporter, st *memory.Store, script scripted.Script) *swarm.Runtime {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), ModelSpec: "scripted:demo", TracerProvider: tp,
		RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// TestGoldenSpanTree: one trace for the run tree, spans after the GenAI
// conventions, the child swarm's run under the handoff's execute_tool.
func TestGoldenSpanTree(t *testing.T) {
	ctx := ctxT(t)
	exp := tracetest.NewInMemoryExporter()
	trip, script := traced()
	rt := tracingRuntime(t, exp, memory.New(), script)
	if err := rt.Register(trip); err != nil {
		t.Fatal(err)
	}
	res, run, err := trip.Run(ctx, rt, "a trip")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Completed[string]); !ok {
		t.Fatalf("result %#v", res)
	}
	rt.Close() // every drive has ended its spans
	spans := exp.GetSpans()
	traces := map[string]bool{}
	for _, s := range spans {
		traces[s.SpanContext.TraceID().String()] = true
		conv := ""
		for _, kv := range s.Attributes {
			if kv.Key == "gen_ai.conversation.id" {
				conv = kv.Value.AsString()
			}
		}
		if conv == "" {
			t.Errorf("span %s has no gen_ai.conversation.id", s.Name)
		}
		if s.Name == "invoke_agent trip" && conv != run.ID() {
			t.Errorf("run span's conversation id %q, want %q", conv, run.ID())
		}
	}
	if len(traces) != 1 {
		t.Errorf("%d traces, want one for the run tree", len(traces))
	}
	want := `invoke_agent trip gen_ai.agent.name=trip swarm.run.state=completed
  chat demo gen_ai.agent.name=trip
  execute_tool book gen_ai.tool.call.id=c1 gen_ai.agent.name=trip
    apply_guardrail audit gen_ai.agent.name=trip gen_ai.guardrail.result.type=allow
  chat demo gen_ai.agent.name=trip
  execute_tool handoff_to_weather gen_ai.tool.call.id=c2 gen_ai.agent.name=trip
    invoke_agent weather gen_ai.agent.name=weather
      chat demo gen_ai.agent.name=weather
  chat demo gen_ai.agent.name=trip
  execute_tool handoff_to_packing gen_ai.tool.call.id=c3 gen_ai.agent.name=trip
    invoke_agent packing gen_ai.agent.name=packing swarm.run.state=completed
      chat demo gen_ai.agent.name=packing
  chat demo gen_ai.agent.name=trip
`
	if got := spanTree(spans); got != want {
		t.Errorf("span tree\n%s\nwant\n%s", got, want)
	}
}

// TestRecoveredRunLinksItsFirstTrace: a run killed mid-way never exports
// its first span, so the drive that recovers it in another runtime starts
// a trace of its own whose invoke_agent span links to the journaled trace
// context: no recovered span points to a parent that was never exported.
func TestRecoveredRunLinksItsFirstTrace(t *testing.T) {
	for _, k := range []int64{2, 4} {
		t.Run(fmt.Sprint("after_append_", k), func(t *testing.T) {
			ctx := ctxT(t)
			trip, script := traced()
			expA, expB := tracetest.NewInMemoryExporter(), tracetest.NewInMemoryExporter()
			mem := memory.New()
			d := dying(t, mem, k)
			tpA := sdktrace.NewTracerProvider(sdktrace.WithSyncer(expA))
			a, err := swarm.New(swarm.Config{Store: d, Model: scripted.New(script), Lease: 60 * time.Millisecond, RetryBackoff: time.Millisecond, Owner: "A", TracerProvider: tpA})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if err := a.Register(trip); err != nil {
				t.Fatal(err)
			}
			id, err := a.Start(ctx, "trip", []byte(`"go"`))
			if err != nil {
				t.Fatal(err)
			}
			for !d.Dead() {
				if ctx.Err() != nil {
					t.Fatal("the store never failed")
				}
				time.Sleep(time.Millisecond)
			}
			time.Sleep(80 * time.Millisecond) // A's lease runs out
			b := tracingRuntime(t, expB, mem, script)
			if err := b.Register(trip); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			if st, err := b.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
				t.Fatalf("state %v %v", st, err)
			}
			b.Close()
			evs, err := b.History(ctx, id, 0)
			if err != nil || evs[0].Trace == "" {
				t.Fatalf("no trace context journaled: %+v %v", evs[0], err)
			}
			first := strings.Split(evs[0].Trace, "-") // 00-trace-span-flags
			spans := expB.GetSpans()
			exported := map[string]bool{}
			for _, s := range spans {
				exported[s.SpanContext.SpanID().String()] = true
			}
			var resumed []tracetest.SpanStub
			for _, s := range spans {
				if s.Parent.IsValid() && !exported[s.Parent.SpanID().String()] {
					t.Errorf("recovered span %s has parent %s, which was never exported", s.Name, s.Parent.SpanID())
				}
				if slices.Contains(s.Attributes, attribute.Bool("swarm.run.resumed", true)) {
					resumed = append(resumed, s)
				}
			}
			if len(resumed) != 1 {
				t.Fatalf("%d resumed invoke_agent spans, want 1", len(resumed))
			}
			r := resumed[0]
			if r.Name != "invoke_agent trip" || r.Parent.IsValid() {
				t.Errorf("resumed span %s with parent %v, want invoke_agent trip as a root", r.Name, r.Parent)
			}
			if len(r.Links) != 1 || r.Links[0].SpanContext.TraceID().String() != first[1] || r.Links[0].SpanContext.SpanID().String() != first[2] {
				t.Errorf("resumed span links %+v, want one to the journaled trace context %s", r.Links, evs[0].Trace)
			}
			for _, s := range spans {
				if s.SpanContext.TraceID() != r.SpanContext.TraceID() {
					t.Errorf("recovered span %s in trace %s, want the recovered drive's %s", s.Name, s.SpanContext.TraceID(), r.SpanContext.TraceID())
				}
			}
		})
	}
}

// TestSpanAttributes: the attributes the GenAI conventions ask of each
// span: the provider and agent id of invoke_agent spans, the response id
// and model of chat spans, the tool type of execute_tool spans.
func TestSpanAttributes(t *testing.T) {
	ctx := ctxT(t)
	exp := tracetest.NewInMemoryExporter()
	trip, script := traced()
	for agent, steps := range script {
		for i := range steps {
			steps[i].ResponseID, steps[i].Model = fmt.Sprintf("resp_%s_%d", agent, i), "demo-2026-01-01"
		}
	}
	rt := tracingRuntime(t, exp, memory.New(), script)
	if err := rt.Register(trip); err != nil {
		t.Fatal(err)
	}
	if _, _, err := trip.Run(ctx, rt, "a trip"); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	attr := func(s tracetest.SpanStub, key string) string {
		for _, kv := range s.Attributes {
			if string(kv.Key) == key {
				return kv.Value.Emit()
			}
		}
		return "<missing>"
	}
	counts := map[string]int{}
	chatIDs := map[string]bool{}
	for _, s := range exp.GetSpans() {
		op := attr(s, "gen_ai.operation.name")
		counts[op]++
		switch op {
		case "invoke_agent":
			name := attr(s, "gen_ai.agent.name")
			if attr(s, "gen_ai.provider.name") != "scripted" || attr(s, "gen_ai.agent.id") != name {
				t.Errorf("%s: provider %s, agent id %s, want scripted and %s", s.Name, attr(s, "gen_ai.provider.name"), attr(s, "gen_ai.agent.id"), name)
			}
		case "chat":
			id := attr(s, "gen_ai.response.id")
			if !strings.HasPrefix(id, "resp_"+attr(s, "gen_ai.agent.name")+"_") || attr(s, "gen_ai.response.model") != "demo-2026-01-01" {
				t.Errorf("%s: response id %s, model %s", s.Name, id, attr(s, "gen_ai.response.model"))
			}
			chatIDs[id] = true
		case "execute_tool":
			if attr(s, "gen_ai.tool.type") != "function" {
				t.Errorf("%s: tool type %s, want function", s.Name, attr(s, "gen_ai.tool.type"))
			}
		}
	}
	if counts["invoke_agent"] != 3 || counts["chat"] != 6 || len(chatIDs) != 6 || counts["execute_tool"] != 3 {
		t.Errorf("spans by operation %v, %d distinct response ids; want 3 invoke_agent, 6 chat, 3 execute_tool", counts, len(chatIDs))
	}
}

// BenchmarkRoundTracing measures a round (see benchRounds) with tracing
// and metrics off, and on with an in-memory span exporter.
func BenchmarkRoundTracing(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchRoundsWith(b, swarm.Config{Store: memory.New()}, nil) })
	b.Run("on", func(b *testing.B) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer tp.Shutdown(context.Background())
		defer mp.Shutdown(context.Background())
		benchRoundsWith(b, swarm.Config{Store: memory.New(), TracerProvider: tp, MeterProvider: mp}, exp.Reset)
	})
}
