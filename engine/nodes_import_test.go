package engine_test

// The built-in node kinds live in engine/nodes, which imports engine and
// registers them in its init: imported here, in the package's external
// test, they are registered in the one test binary that runs the
// internal tests too, which build engines with New and run workflows of
// every node type, without an import cycle.
import _ "github.com/runnerd/lambda-runner/engine/nodes"
