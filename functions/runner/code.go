package main

import (
	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/functions/wiring"
	"github.com/runnerd/lambda-runner/infra/config"
)

// codePool is the sandbox of code nodes (wiring.CodePool): a missing
// worker stops the runner at start, naming the path.
func codePool(cfg config.Config, l engine.Limits) (engine.CodeRunner, error) {
	return wiring.CodePool(cfg, l)
}
