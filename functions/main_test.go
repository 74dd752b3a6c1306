package functions_test

import (
	"testing"

	"go.uber.org/goleak"

	_ "github.com/runnerd/lambda-runner/engine/nodes" // the built-in node kinds, for the engines the tests build
)

// TestMain fails the package if any test leaves a goroutine behind: every
// execution ends with its request, whether it completed, failed or lost its
// client, and every test server is closed by the end of its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
