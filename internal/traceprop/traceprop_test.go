package traceprop_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/swarmrt/swarm/internal/traceprop"
)

// TestRoundTrip: a client request made under a span carries its trace to
// the server side; one made without a span carries nothing.
func TestRoundTrip(t *testing.T) {
	got := make(chan trace.SpanContext, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- trace.SpanContextFromContext(traceprop.Extract(r).Context())
	}))
	defer srv.Close()
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(context.Background(), "call")
	defer span.End()
	client := &http.Client{Transport: traceprop.Transport(nil)}
	for _, c := range []context.Context{ctx, context.Background()} {
		req, _ := http.NewRequestWithContext(c, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if sc := <-got; sc.TraceID() != span.SpanContext().TraceID() || !sc.IsRemote() {
		t.Errorf("server saw %v, want trace %s", sc, span.SpanContext().TraceID())
	}
	if sc := <-got; sc.IsValid() {
		t.Errorf("a request without a span carried %v", sc)
	}
}
