// Command codeworker is the sandbox worker of code nodes: the runner starts
// it (engine/sandbox's Pool, with sandbox.WorkerArg) to evaluate
// JavaScript with goja, one request at a time, under a kernel memory limit
// it sets on itself (engine/sandbox/worker). It is an executable of its own
// so that the runner's bootstrap links no JavaScript runtime: the Lambda
// package holds it beside bootstrap, where the runner looks for it
// (RUNNER_CODE_WORKER names another place; docs/deploy.md).
package main

import (
	"fmt"
	"os"

	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/sandbox/worker"
)

func main() {
	if !worker.Requested(os.Args) {
		fmt.Fprintf(os.Stderr, "codeworker: the runner's sandbox worker for code nodes; the runner starts it (%s), there is nothing to run by hand\n", sandbox.WorkerArg)
		os.Exit(2)
	}
	worker.Main(os.Args)
}
