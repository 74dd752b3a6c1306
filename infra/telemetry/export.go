package telemetry

import (
	"context"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP protocols of TracingOptions.Protocol.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// TracingOptions configure NewTracing.
type TracingOptions struct {
	// Protocol is ProtocolHTTP (also the zero value) or ProtocolGRPC.
	Protocol string
	// ServiceName and ServiceVersion are the resource's service.name and
	// service.version unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
	// say otherwise.
	ServiceName, ServiceVersion string
	// Exporter, when not nil, replaces the OTLP exporter (tests and
	// benchmarks).
	Exporter sdktrace.SpanExporter
}

// Tracing is the process's trace pipeline: an SDK tracer provider that
// batches spans and exports them over OTLP. The exporter reads its
// endpoint, headers, timeout and TLS settings from the standard
// OTEL_EXPORTER_OTLP_* variables and the provider its sampler from
// OTEL_TRACES_SAMPLER, as the OpenTelemetry specification defines them.
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
			exp, err = otlptracehttp.New(ctx)
		case ProtocolGRPC:
			exp, err = otlptracegrpc.New(ctx)
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

// traceContext is the W3C Trace Context propagator (traceparent and
// tracestate headers).
var traceContext propagation.TraceContext

// TraceRequests serves h with each request's context carrying the
// request's W3C trace context, so that the execution span it starts is a
// child of the caller's span.
func TraceRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Propagating wraps rt so that each request carries the W3C trace context
// of its context's span (a node attempt's), making the server's spans its
// children.
//
// Only the header is added: no client span is recorded. The
// instrumentation that records one (otelhttp) puts the full URL on it, and
// an http node's URL, query string included, is the workflow's: it may
// carry an API key or the execution's data, and spans carry no values.
func Propagating(rt http.RoundTripper) http.RoundTripper {
	return propagatingTransport{rt}
}

type propagatingTransport struct{ rt http.RoundTripper }

func (p propagatingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	carrier := propagation.MapCarrier{}
	traceContext.Inject(r.Context(), carrier)
	if len(carrier) == 0 {
		return p.rt.RoundTrip(r)
	}
	// A RoundTripper must not change the caller's request.
	r = r.Clone(r.Context())
	for k, v := range carrier {
		r.Header.Set(k, v)
	}
	return p.rt.RoundTrip(r)
}
