package worker

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain makes the test binary the worker when the pool starts it with
// the worker argument, as the codeworker command does, and otherwise fails the
// package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	if Requested(os.Args) {
		Main(os.Args)
	}
	goleak.VerifyTestMain(m)
}
