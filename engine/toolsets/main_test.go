package toolsets

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// Set is closed, and every test server shut down, by the end of its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
