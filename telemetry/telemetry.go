// Package telemetry sets up OpenTelemetry for a swarm runtime: traces and
// metrics after the GenAI semantic conventions, exported over OTLP/HTTP and
// readable in the Prometheus text format for a /metrics endpoint.
//
// It is off unless configured: [FromEnv] returns nil when no OTEL_* variable
// asks for export, and a runtime without a tracer or meter provider pays
// nothing. The standard variables apply: OTEL_EXPORTER_OTLP_ENDPOINT (and
// the _TRACES_/_METRICS_ variants), OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_EXPORTER and
// OTEL_METRICS_EXPORTER (otlp or none), OTEL_SDK_DISABLED; message content
// goes on spans only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
// is true.
//
// Spans: invoke_agent {swarm} per drive of a run and invoke_agent {agent}
// per handoff to an agent; chat {model} per model call; execute_tool {tool}
// per tool call (handoffs included); apply_guardrail {guardrail} per check.
// Each carries gen_ai.conversation.id (the run id) and gen_ai.agent.name;
// invoke_agent spans gen_ai.agent.id and gen_ai.provider.name, chat spans
// gen_ai.response.id and gen_ai.response.model when the provider gives
// them, execute_tool spans gen_ai.tool.type "function". A run's trace
// context is journaled with the run, so its child runs continue its trace;
// W3C traceparent headers carry it across A2A and MCP calls. A later drive
// of a run (recovered after a crash, resumed after a pause) starts a trace
// of its own whose invoke_agent span links to the journaled context: the
// first drive's span may never have been exported (a killed process), so
// it is never made a parent.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/swarmrt/swarm"
)

// Options configures [New].
type Options struct {
	// ServiceName is the service.name resource attribute unless
	// OTEL_SERVICE_NAME sets it (default "swarm").
	ServiceName string
	// SpanExporter receives the spans (nil: none, unless OTLP is on).
	SpanExporter sdktrace.SpanExporter
	// Sync exports each span as it ends (tests); otherwise spans are
	// batched.
	Sync bool
	// OTLP exports spans and metrics over OTLP/HTTP, configured by the
	// OTEL_EXPORTER_OTLP_* variables.
	OTLP bool
	// MetricReader, when set, also receives the metrics.
	MetricReader sdkmetric.Reader
	// CaptureContent puts message content on spans.
	CaptureContent bool
}

// Telemetry holds the providers a runtime uses. Shut it down when done.
type Telemetry struct {
	tp      *sdktrace.TracerProvider
	mp      *sdkmetric.MeterProvider
	reader  *sdkmetric.ManualReader
	capture bool
}

// FromEnv returns telemetry configured by the standard OTEL_* variables, or
// nil (and no error) when none asks for it: OTLP export is on when
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set, or OTEL_TRACES_EXPORTER is
// otlp; OTEL_SDK_DISABLED=true turns it off.
func FromEnv(ctx context.Context) (*Telemetry, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	on := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "" || os.Getenv("OTEL_TRACES_EXPORTER") == "otlp"
	if !on {
		return nil, nil
	}
	return New(ctx, Options{OTLP: true, CaptureContent: strings.EqualFold(os.Getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), "true")})
}

// New makes telemetry with opts. Metrics are always kept for
// [Telemetry.WritePrometheus].
func New(ctx context.Context, opts Options) (*Telemetry, error) {
	name := opts.ServiceName
	if name == "" {
		name = "swarm"
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name)))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	t := &Telemetry{reader: sdkmetric.NewManualReader(), capture: opts.CaptureContent}
	topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(t.reader)}
	if opts.SpanExporter != nil {
		if opts.Sync {
			topts = append(topts, sdktrace.WithSyncer(opts.SpanExporter))
		} else {
			topts = append(topts, sdktrace.WithBatcher(opts.SpanExporter))
		}
	}
	if opts.MetricReader != nil {
		mopts = append(mopts, sdkmetric.WithReader(opts.MetricReader))
	}
	if opts.OTLP {
		if os.Getenv("OTEL_TRACES_EXPORTER") != "none" {
			exp, err := otlptracehttp.New(ctx)
			if err != nil {
				return nil, fmt.Errorf("telemetry: OTLP trace exporter: %w", err)
			}
			if opts.Sync {
				topts = append(topts, sdktrace.WithSyncer(exp))
			} else {
				topts = append(topts, sdktrace.WithBatcher(exp))
			}
		}
		if os.Getenv("OTEL_METRICS_EXPORTER") != "none" {
			exp, err := otlpmetrichttp.New(ctx)
			if err != nil {
				return nil, fmt.Errorf("telemetry: OTLP metric exporter: %w", err)
			}
			mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
		}
	}
	t.tp = sdktrace.NewTracerProvider(topts...)
	t.mp = sdkmetric.NewMeterProvider(mopts...)
	// W3C trace context for whatever else in the process propagates.
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return t, nil
}

// Apply makes cfg trace and measure with t (a nil t leaves cfg alone).
func (t *Telemetry) Apply(cfg *swarm.Config) {
	if t == nil {
		return
	}
	cfg.TracerProvider, cfg.MeterProvider = t.tp, t.mp
	cfg.CaptureContent = cfg.CaptureContent || t.capture
}

// TracerProvider returns the tracer provider.
func (t *Telemetry) TracerProvider() *sdktrace.TracerProvider { return t.tp }

// MeterProvider returns the meter provider.
func (t *Telemetry) MeterProvider() *sdkmetric.MeterProvider { return t.mp }

// Shutdown flushes and stops the exporters.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
}

// WritePrometheus writes the current metrics in the Prometheus text
// format: names with dots become underscores, histograms get _bucket,
// _sum and _count series, counters a _total suffix.
func (t *Telemetry) WritePrometheus(ctx context.Context, w io.Writer) error {
	if t == nil {
		return nil
	}
	var rm metricdata.ResourceMetrics
	if err := t.reader.Collect(ctx, &rm); err != nil {
		return fmt.Errorf("telemetry: collect: %w", err)
	}
	return writePrometheus(w, &rm)
}
