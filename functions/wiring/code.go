//go:build !nocode

package wiring

import (
	"fmt"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/infra/config"
)

// CodePool is the sandbox of code nodes. Its workers are the codeworker
// executable (functions/codeworker), not the runner, so that the
// bootstrap links no JavaScript runtime: cfg.CodeWorker
// (RUNNER_CODE_WORKER) when set, else sandbox.WorkerName beside this
// executable, as the Lambda package ships it. A missing worker is an
// error naming the path (and the variable, when set), rather than a
// failure of the first code node. Workers start on a code node's first
// evaluation, never before. As many run at once as an execution's
// concurrency allows and the memory budget holds at MaxCodeMemory each,
// and at least two, so that one execution, which holds at most half of
// them (sandbox.Pool.Share), always leaves one to the others; one more is
// reserved for syntax checks. A build with the nocode tag has none
// (code_off.go).
func CodePool(cfg config.Config, l engine.Limits) (engine.CodeRunner, error) {
	path := cfg.CodeWorker
	if path == "" {
		p, err := sandbox.DefaultWorker()
		if err != nil {
			return nil, err
		}
		path = p
	}
	if err := sandbox.CheckWorker(path); err != nil {
		if cfg.CodeWorker != "" {
			return nil, fmt.Errorf("RUNNER_CODE_WORKER: code nodes: %w (make build and make run build the worker; "+
				"unset, %s beside the runner's executable is used; a CODE=off build has no code node)", err, sandbox.WorkerName)
		}
		return nil, fmt.Errorf("code nodes: %w (the Lambda package ships %s beside bootstrap, make build and make run build it; "+
			"RUNNER_CODE_WORKER names another path, a CODE=off build has no code node)", err, sandbox.WorkerName)
	}
	workers := max(2, min(l.MaxConcurrency, int(l.MemoryBudget/l.MaxCodeMemory)))
	return &sandbox.Pool{Options: sandbox.Options{Path: path, MemoryBytes: l.MaxCodeMemory, Workers: workers}}, nil
}
