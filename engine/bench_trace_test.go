package engine

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/runnerd/lambda-runner/infra/telemetry"
)

// BenchmarkChain1000Traced is BenchmarkChain1000 with tracing on: the SDK
// provider with its batch processor, as the runner configures it, and an
// exporter that drops the batches, so what is measured is the spans'
// cost in the engine, not a collector's. Compare with BenchmarkChain1000
// (tracing off, docs/deploy.md).
func BenchmarkChain1000Traced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	e := New(DefaultLimits())
	e.Observer = telemetry.Tracer{T: tp.Tracer("bench")}
	benchmarkRunOn(b, e, chainBody(1000), 1000)
}
