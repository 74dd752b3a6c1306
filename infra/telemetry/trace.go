package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/runnerd/lambda-runner/protocol"
)

// Tracer turns executions and node attempts into OpenTelemetry spans. It
// satisfies engine.Observer structurally and uses the OTel API only; the
// SDK and exporter are main's choice. Spans carry ids, node types,
// attempts, statuses and codes, never a value.
type Tracer struct {
	T trace.Tracer
}

// StartExecution starts the execution's span as a child of the request's.
func (t Tracer) StartExecution(ctx context.Context, executionID string) (context.Context, func(protocol.Summary)) {
	ctx, span := t.T.Start(ctx, "execution", trace.WithAttributes(attribute.String("runner.execution.id", executionID)))
	return ctx, func(s protocol.Summary) {
		span.SetAttributes(attribute.String("runner.execution.status", string(s.Status)), attribute.Int64("runner.execution.nodes", s.Nodes))
		if s.Code != "" {
			span.SetAttributes(attribute.String("runner.error.code", string(s.Code)))
			span.SetStatus(codes.Error, string(s.Code))
		}
		span.End()
	}
}

// StartAttempt starts a node attempt's span; outbound calls made with the
// returned context carry it as their traceparent.
func (t Tracer) StartAttempt(ctx context.Context, nodeID, nodeType string, attempt int) (context.Context, func(status, code string)) {
	ctx, span := t.T.Start(ctx, "node "+nodeType, trace.WithAttributes(
		attribute.String("runner.node.id", nodeID), attribute.String("runner.node.type", nodeType), attribute.Int("runner.node.attempt", attempt)))
	return ctx, func(status, code string) {
		span.SetAttributes(attribute.String("runner.node.status", status))
		if code != "" {
			span.SetAttributes(attribute.String("runner.error.code", code))
			span.SetStatus(codes.Error, code)
		}
		span.End()
	}
}
