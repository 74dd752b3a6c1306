package telemetry

import (
	"testing"

	"go.uber.org/goleak"
)

// The trace pipeline starts goroutines (the batch processor, the
// exporter's HTTP connections): none may outlive Shutdown.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
