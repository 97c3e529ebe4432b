// Package traceprop carries W3C trace context (traceparent, tracestate)
// over HTTP: outgoing requests of A2A and MCP clients, incoming requests of
// the server. Without a span in the context nothing is added.
package traceprop

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

var tc propagation.TraceContext

// Transport returns base (http.DefaultTransport when nil) adding the trace
// context of each request's context to its headers.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if _, ok := base.(transport); ok {
		return base
	}
	return transport{base: base}
}

type transport struct{ base http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if trace.SpanContextFromContext(req.Context()).IsValid() {
		req = req.Clone(req.Context())
		tc.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	}
	return t.base.RoundTrip(req)
}

// Extract returns r with the trace context of its traceparent header, if
// any, in its context, so that runs it starts join the caller's trace.
func Extract(r *http.Request) *http.Request {
	if r.Header.Get("traceparent") == "" {
		return r
	}
	return r.WithContext(tc.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
}
