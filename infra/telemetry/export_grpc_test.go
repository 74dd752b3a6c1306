//go:build !notracing && otlpgrpc

package telemetry

import (
	"context"
	"net"
	"sync"
	"testing"

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

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc in a TRACING=grpc build: the spans reach a gRPC collector, and
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
