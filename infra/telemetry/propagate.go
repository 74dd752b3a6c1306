package telemetry

import (
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"
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

	// The OTLP/HTTP exporter's settings (config.OTLP says what each
	// means); zero values are the exporter's defaults.

	// URL is the traces endpoint (DefaultOTLPURL when "").
	URL string
	// Headers are sent with every export; their values are never logged.
	Headers map[string]string
	// Timeout bounds one export, retries included (DefaultOTLPTimeout
	// when 0).
	Timeout time.Duration
	// Gzip compresses export requests.
	Gzip bool
	// CertificateFile, ClientCertificateFile and ClientKeyFile are PEM
	// files: the CAs trusted instead of the system's, and a client
	// certificate for mutual TLS.
	CertificateFile, ClientCertificateFile, ClientKeyFile string
}

// The OTLP/HTTP exporter's defaults, the specification's.
const (
	DefaultOTLPURL     = "http://localhost:4318/v1/traces"
	DefaultOTLPTimeout = 10 * time.Second
)

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
