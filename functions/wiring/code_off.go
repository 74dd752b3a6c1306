//go:build nocode

package wiring

import (
	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/infra/config"
)

// CodePool is nil: a nocode build runs no code node (CODE=off,
// docs/deploy.md) and needs no worker; RUNNER_CODE_WORKER is ignored.
func CodePool(config.Config, engine.Limits) (engine.CodeRunner, error) { return nil, nil }
