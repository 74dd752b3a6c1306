//go:build notracing

package telemetry

import (
	"context"
	"strings"
	"testing"
)

// A TRACING=off build refuses to start a trace pipeline, naming the build
// option, and its Tracing does nothing.
func TestTracingNotCompiledIn(t *testing.T) {
	tr, err := NewTracing(context.Background(), TracingOptions{})
	if err == nil || !strings.Contains(err.Error(), "TRACING=off") {
		t.Fatalf("NewTracing = %v, %v; want an error naming TRACING=off", tr, err)
	}
	var off *Tracing
	if err := off.Flush(context.Background()); err != nil {
		t.Error(err)
	}
	if err := off.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}
