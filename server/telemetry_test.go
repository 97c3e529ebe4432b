package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/telemetry"
)

// TestTelemetry: with Options.Metrics set to the telemetry's Prometheus
// writer, GET /metrics shows the GenAI histograms and the runs by state;
// a run started by a request with a W3C traceparent header joins that
// trace, its first span a child of the caller's span.
func TestTelemetry(t *testing.T) {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(ctx, telemetry.Options{SpanExporter: spans, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	cfg := swarm.Config{Store: memory.New(), Model: scripted.New(testScript()), RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond}
	tel.Apply(&cfg)
	rt, err := swarm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(testSwarms()...); err != nil {
		t.Fatal(err)
	}
	ts, _ := serveRuntime(t, rt, Options{Metrics: tel.WritePrometheus})
	c := client{t: t, base: ts.URL}

	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/swarms/echo/runs", strings.NewReader(`{"input": "hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parent+"-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("start: %d", res.StatusCode)
	}
	id := strings.TrimPrefix(res.Header.Get("Location"), "/v1/runs/")
	if code, st := c.wait(id); code != http.StatusOK || st.State != swarm.StateCompleted {
		t.Fatalf("run: %d %+v", code, st)
	}
	rt.Close() // every drive has ended its spans and counted its run

	got := spans.GetSpans()
	if len(got) == 0 {
		t.Fatal("no spans")
	}
	roots := 0
	for _, s := range got {
		if s.SpanContext.TraceID().String() != traceID {
			t.Errorf("span %s is in trace %s, not the caller's", s.Name, s.SpanContext.TraceID())
		}
		if s.Parent.SpanID().String() == parent {
			roots++
			if s.Name != "invoke_agent echo" {
				t.Errorf("the caller's span is the parent of %s", s.Name)
			}
		}
	}
	if roots != 1 {
		t.Errorf("%d spans are children of the caller's span, want 1", roots)
	}

	out := string(c.get("/metrics").body)
	for _, want := range []string{
		"swarm_runs_claimed_total",
		"# TYPE gen_ai_client_token_usage histogram",
		`gen_ai_client_token_usage_count{gen_ai_agent_name="echo",gen_ai_operation_name="chat"`,
		"# TYPE gen_ai_client_operation_duration histogram",
		`gen_ai_client_operation_duration_count{gen_ai_agent_name="echo",gen_ai_operation_name="chat"`,
		`swarm_runs_total{gen_ai_agent_name="echo",swarm_run_state="completed"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("GET /metrics lacks %q:\n%s", want, out)
		}
	}
}
