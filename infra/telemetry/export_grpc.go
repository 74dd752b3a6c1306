//go:build !notracing && otlpgrpc

package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// grpcCompiledIn says whether TRACING=grpc built this binary.
const grpcCompiledIn = true

// newGRPCExporter is the OpenTelemetry OTLP/gRPC exporter, compiled in by
// TRACING=grpc (the otlpgrpc tag). It reads its OTEL_EXPORTER_OTLP_*
// settings itself.
func newGRPCExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	return otlptracegrpc.New(ctx)
}
