package models

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: an SDK
// retry loop or a keep-alive connection that outlives its call.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
