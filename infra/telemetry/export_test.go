//go:build !notracing

package telemetry

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/runnerd/lambda-runner/protocol"
)

// grpcReceiver is an OTLP/gRPC trace service that keeps what it is sent.
type grpcReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (g *grpcReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			g.spans = append(g.spans, ss.Spans...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc: the spans reach a gRPC collector, and
// Flush delivers them without waiting for the batch interval.
func TestTracingExportsOverGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &grpcReceiver{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, rcv)
	go srv.Serve(ln)
	defer srv.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())

	tr, err := NewTracing(context.Background(), TracingOptions{Protocol: ProtocolGRPC, ServiceName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, endExec := tr.Observer().StartExecution(context.Background(), "exec-1")
	_, endAttempt := tr.Observer().StartAttempt(ctx, "n", "set", 2)
	endAttempt("completed", "")
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	got := len(rcv.spans)
	var attempt int64
	if got == 1 {
		for _, a := range rcv.spans[0].Attributes {
			if a.Key == "runner.node.attempt" {
				attempt = a.GetValue().GetIntValue()
			}
		}
	}
	rcv.mu.Unlock()
	if got != 1 || attempt != 2 {
		t.Errorf("collector got %d spans (attempt %d), want the ended attempt's span", got, attempt)
	}
	endExec(protocol.Summary{Status: protocol.StatusCompleted})
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.spans) != 2 {
		t.Errorf("after Shutdown the collector has %d spans, want 2", len(rcv.spans))
	}
}

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
