//go:build !notracing

package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func TestNewTracingRefusesUnknownProtocol(t *testing.T) {
	if _, err := NewTracing(context.Background(), TracingOptions{Protocol: "http/json"}); err == nil {
		t.Error("NewTracing accepted http/json")
	}
}

// Propagating adds the traceparent of the request's span, and leaves the
// caller's request, and a request without a span, as they were.
func TestPropagating(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Traceparent"))
	}))
	defer srv.Close()
	client := &http.Client{Transport: Propagating(http.DefaultTransport)}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	traced, span := tp.Tracer("t").Start(context.Background(), "attempt")
	defer span.End()

	for _, ctx := range []context.Context{context.Background(), traced} {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(req.Header) != 0 {
			t.Errorf("the caller's request was changed: %v", req.Header)
		}
	}
	sc := span.SpanContext()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if len(seen) != 2 || seen[0] != "" || seen[1] != want {
		t.Errorf("server saw traceparents %q, want none then %q", seen, want)
	}
}

// TraceRequests hands the handler the request's trace context; a malformed
// header is ignored.
func TestTraceRequests(t *testing.T) {
	tests := []struct {
		header string
		want   string // the remote parent's trace id, "" for none
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", ""},
		{"garbage", ""},
		{"", ""},
	}
	for _, tt := range tests {
		var got string
		h := TraceRequests(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() && sc.IsRemote() {
				got = sc.TraceID().String()
			}
		}))
		req := httptest.NewRequest("POST", "/v1/executions", nil)
		if tt.header != "" {
			req.Header.Set("Traceparent", tt.header)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
		if got != tt.want {
			t.Errorf("traceparent %q: handler saw trace %q, want %q", tt.header, got, tt.want)
		}
	}
}
