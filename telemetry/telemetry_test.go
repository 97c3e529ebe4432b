package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/telemetry"
)

// collector is an OTLP/HTTP endpoint that decodes what it receives.
type collector struct {
	mu      sync.Mutex
	spans   []string
	metrics []string
	convIDs []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r.URL.Path {
	case "/v1/traces":
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, s.Name)
					for _, kv := range s.Attributes {
						if kv.Key == "gen_ai.conversation.id" {
							c.convIDs = append(c.convIDs, kv.Value.GetStringValue())
						}
					}
				}
			}
		}
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	case "/v1/metrics":
		var req colmetric.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					c.metrics = append(c.metrics, m.Name)
				}
			}
		}
		out, _ := proto.Marshal(&colmetric.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	default:
		http.NotFound(w, r)
	}
}

func runOnce(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := swarm.Config{Model: scripted.New(scripted.Script{"s": {{Text: "hi", Usage: model.Usage{InputTokens: 12, OutputTokens: 3}}}}), ModelSpec: "scripted:demo"}
	tel.Apply(&cfg)
	rt, err := swarm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s := swarm.Define[string, string]("s", "says hi", func(string) swarm.Spec { return swarm.Spec{} })
	if err := rt.Register(s); err != nil {
		t.Fatal(err)
	}
	_, run, err := s.Run(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	return run.ID()
}

// TestSpansReachAnOTLPEndpoint: with only the standard environment
// variables set, spans and metrics reach an OTLP/HTTP endpoint as
// protobuf.
func TestSpansReachAnOTLPEndpoint(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "swarm-test")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tel, err := telemetry.FromEnv(ctx)
	if err != nil || tel == nil {
		t.Fatalf("FromEnv: %v, %v", tel, err)
	}
	id := runOnce(t, tel)
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if got := strings.Join(col.spans, ","); !strings.Contains(got, "invoke_agent s") || !strings.Contains(got, "chat demo") {
		t.Errorf("spans received: %s", got)
	}
	for _, c := range col.convIDs {
		if c != id {
			t.Errorf("conversation id %q, want %q", c, id)
		}
	}
	if got := strings.Join(col.metrics, ","); !strings.Contains(got, "gen_ai.client.token.usage") || !strings.Contains(got, "gen_ai.client.operation.duration") || !strings.Contains(got, "swarm.runs") {
		t.Errorf("metrics received: %s", got)
	}
}

func TestOffWithoutEnvironment(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	tel, err := telemetry.FromEnv(context.Background())
	if tel != nil || err != nil {
		t.Fatalf("FromEnv without variables: %v, %v", tel, err)
	}
	var cfg swarm.Config
	tel.Apply(&cfg)
	if cfg.TracerProvider != nil || cfg.MeterProvider != nil {
		t.Error("a nil Telemetry configured the runtime")
	}
}

// TestPrometheusText: the metrics render in the Prometheus text format.
func TestPrometheusText(t *testing.T) {
	ctx := context.Background()
	tel, err := telemetry.New(ctx, telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	runOnce(t, tel)
	var b strings.Builder
	if err := tel.WritePrometheus(ctx, &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# TYPE gen_ai_client_token_usage histogram",
		`gen_ai_client_token_usage_sum{gen_ai_agent_name="s",gen_ai_operation_name="chat",gen_ai_provider_name="scripted",gen_ai_request_model="demo",gen_ai_token_type="input"} 12`,
		`gen_ai_client_operation_duration_count{gen_ai_agent_name="s",gen_ai_operation_name="chat",gen_ai_provider_name="scripted",gen_ai_request_model="demo"} 1`,
		`swarm_runs_total{gen_ai_agent_name="s",swarm_run_state="completed"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}
