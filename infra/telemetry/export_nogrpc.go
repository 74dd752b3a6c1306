//go:build !notracing && !otlpgrpc

package telemetry

import (
	"context"
	"errors"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// errNoGRPC is the start-up error of a default build asked for OTLP/gRPC:
// gRPC is a build option because it doubles what tracing adds to the
// binary.
var errNoGRPC = errors.New("OTEL_EXPORTER_OTLP_PROTOCOL (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) is grpc, which this runner is not built with: " +
	"build it with TRACING=grpc (the otlpgrpc tag, docs/deploy.md), or export over http/protobuf")

// grpcCompiledIn says whether TRACING=grpc built this binary.
const grpcCompiledIn = false

func newGRPCExporter(context.Context) (sdktrace.SpanExporter, error) { return nil, errNoGRPC }
