package telemetry_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/telemetry"
)

// A runtime traced into an in-memory exporter: a span per agent loop,
// model call and tool call, after the GenAI semantic conventions.
func ExampleNew() {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(ctx, telemetry.Options{SpanExporter: spans, Sync: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tel.Shutdown(ctx)

	clock := swarm.NewTool("clock", "Tells the time", func(context.Context, struct{}) (string, error) { return "noon", nil })
	asker := swarm.Define[string, string]("asker", "Asks the time", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{clock}}
	})
	cfg := swarm.Config{Model: scripted.New(scripted.Script{"asker": {
		scripted.Tools(scripted.CallTool("clock", nil)),
		scripted.Text("It is noon."),
	}})}
	tel.Apply(&cfg)
	rt, _ := swarm.New(cfg)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, _, err := asker.Run(rctx, rt, "what time is it?"); err != nil {
		fmt.Println(err)
		return
	}
	rt.Close() // every drive has ended its spans
	var names []string
	for _, s := range spans.GetSpans() {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Println(n)
	}
	// Output:
	// chat
	// chat
	// execute_tool clock
	// invoke_agent asker
}
