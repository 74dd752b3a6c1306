package engine

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/runnerd/lambda-runner/engine/sandbox/worker"
)

// TestMain makes the test binary a sandbox worker when a code node's pool
// starts it as one (node_code_test.go), and otherwise fails the package if
// any test leaves a goroutine behind: Run must not return while a node, a
// map iteration or a child workflow still runs, and every test server is
// shut down by the end of its test.
func TestMain(m *testing.M) {
	if worker.Requested(os.Args) {
		worker.Main(os.Args)
	}
	goleak.VerifyTestMain(m)
}
