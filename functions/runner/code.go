//go:build !nocode

package main

import (
	"os"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/sandbox/worker"
)

// serveWorker becomes a sandbox worker and never returns when the process
// was started as one (by codePool's pool, with sandbox.WorkerArg).
func serveWorker() {
	if worker.Requested(os.Args) {
		worker.Main(os.Args)
	}
}

// codePool is the sandbox of code nodes: workers are this binary (main
// dispatches on sandbox.WorkerArg), started on a code node's first
// evaluation, never before. As many run at once as an execution's
// concurrency allows and the memory budget holds at MaxCodeMemory each,
// and at least one. A build with the nocode tag has none (code.go's
// sibling, code_off.go), and leaves the JavaScript engine out.
func codePool(l engine.Limits) engine.CodeRunner {
	workers := min(l.MaxConcurrency, max(1, int(l.MemoryBudget/l.MaxCodeMemory)))
	return &sandbox.Pool{Options: sandbox.Options{MemoryBytes: l.MaxCodeMemory, Workers: workers}}
}
