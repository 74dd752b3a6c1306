// Command runnerctl is the operator's and author's client for Runner
// protocol v1 runners: run with live progress, validate, capabilities, the
// conformance check, token rotation and workflow graphs. See `runnerctl
// --help`.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/cli"
)

// version is set by the build (-ldflags -X main.version=...).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], cli.Env{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Version: version})
	stop()
	os.Exit(code)
}
