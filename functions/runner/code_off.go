//go:build nocode

package main

import "github.com/runnerd/lambda-runner/engine"

// serveWorker does nothing: a nocode build has no sandbox worker.
func serveWorker() {}

// codePool is nil: a nocode build runs no code node (CODE=off, docs/deploy.md).
func codePool(engine.Limits) engine.CodeRunner { return nil }
