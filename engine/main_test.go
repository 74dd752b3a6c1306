package engine

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: Run must
// not return while a node, a map iteration or a child workflow still runs,
// and every test server is shut down by the end of its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
