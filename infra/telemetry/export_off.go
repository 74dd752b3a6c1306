//go:build notracing

package telemetry

import (
	"context"
	"errors"
)

// Tracing is absent from a build with the notracing tag (TRACING=off):
// the OpenTelemetry SDK and the OTLP exporter are left out.
type Tracing struct{}

// NewTracing refuses: this build has no trace pipeline.
func NewTracing(context.Context, TracingOptions) (*Tracing, error) {
	return nil, errors.New("tracing is not compiled into this runner (it was built with TRACING=off, the notracing tag)")
}

// Observer returns an observer that records nothing.
func (*Tracing) Observer() Tracer { return Tracer{} }

// Flush does nothing.
func (*Tracing) Flush(context.Context) error { return nil }

// Shutdown does nothing.
func (*Tracing) Shutdown(context.Context) error { return nil }
