//go:build !notracing

package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Tracing is the process's trace pipeline: an SDK tracer provider that
// batches spans and exports them over OTLP: over HTTP/protobuf with the
// settings TracingOptions carries (config reads them from the standard
// OTEL_EXPORTER_OTLP_* variables), or over gRPC in a TRACING=grpc build,
// whose exporter reads those variables itself. The provider reads its
// sampler from OTEL_TRACES_SAMPLER, as the OpenTelemetry specification
// defines it.
// The batch queue (OTEL_BSP_MAX_QUEUE_SIZE, 2048 spans by default) bounds
// the memory spans take: an execution with more attempts than that drops
// the excess rather than holding them.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// NewTracing starts the trace pipeline. Nothing is dialled until spans
// are exported.
func NewTracing(ctx context.Context, o TracingOptions) (*Tracing, error) {
	exp := o.Exporter
	if exp == nil {
		var err error
		switch o.Protocol {
		case "", ProtocolHTTP:
			var c *otlpHTTPClient
			if c, err = newOTLPHTTPClient(o); err == nil {
				exp = &otlpExporter{client: c}
			}
		case ProtocolGRPC:
			exp, err = newGRPCExporter(ctx)
		default:
			err = fmt.Errorf("OTLP protocol %q is not supported", o.Protocol)
		}
		if err != nil {
			return nil, fmt.Errorf("trace exporter: %w", err)
		}
	}
	// Later sources win: the environment over the runner's defaults.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", o.ServiceName), attribute.String("service.version", o.ServiceVersion)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return &Tracing{tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// Observer returns the engine observer that records spans through t.
func (t *Tracing) Observer() Tracer {
	return Tracer{T: t.tp.Tracer("github.com/runnerd/lambda-runner")}
}

// Flush exports the spans ended so far. Under Lambda it runs before each
// invocation ends: a frozen process exports nothing.
func (t *Tracing) Flush(ctx context.Context) error { return t.tp.ForceFlush(ctx) }

// Shutdown flushes and stops the pipeline; spans ended later are dropped.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }
