package engine_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/infra/telemetry"
	"github.com/runnerd/lambda-runner/protocol"
)

// The span tree of an execution with a map: the map's iterations are
// children of the map node's attempt span, under the execution span.
func TestOpsTraceSpanTree(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	e := engine.New(engine.DefaultLimits())
	e.Observer = telemetry.Tracer{T: tp.Tracer("test")}
	req, err := protocol.DecodeRequest([]byte(`{"version":1,"workflow":{"nodes":[
		{"id":"m","type":"map","with":{"items":[1,2],"nodes":[{"id":"s","type":"set","with":{"value":"x"}}]}},
		{"id":"f","type":"fail","needs":["m"],"with":{"message":"no"}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.Prepare(req)
	if err != nil {
		t.Fatal(err)
	}
	x.Run(context.Background(), protocol.NewWriter(discard{}, "exec-1", nil))
	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	exec := byName["execution"]
	if len(exec) != 1 || len(byName["node map"]) != 1 || len(byName["node set"]) != 2 || len(byName["node fail"]) != 1 {
		t.Fatalf("spans %v", names(spans))
	}
	mapSpan := byName["node map"][0]
	if mapSpan.Parent.SpanID() != exec[0].SpanContext.SpanID() {
		t.Error("map span is not a child of the execution span")
	}
	for _, s := range byName["node set"] {
		if s.Parent.SpanID() != mapSpan.SpanContext.SpanID() {
			t.Error("iteration span is not a child of the map span")
		}
	}
	if byName["node fail"][0].Status.Description != string(protocol.CodeFailed) {
		t.Errorf("fail span status %+v", byName["node fail"][0].Status)
	}
}

func names(ss []tracetest.SpanStub) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
