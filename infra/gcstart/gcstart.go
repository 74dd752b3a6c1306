// Package gcstart sets the garbage collector's target before the packages
// that allocate most at init (the JSON Schema library's meta-schemas, the
// SDKs' tables) run their init functions. Imported for its side effect by
// the runner's main package.
//
// With Go's default target the heap reaches its first goal (4 MB) during
// package init and a collection runs in the middle of a cold start, about
// 1.5 ms of it on a small Lambda (bench/BASELINE.md). At Percent the first
// goal is 16 MB, which init does not reach. Package init runs in import
// path order among the packages whose imports are ready, so this package
// imports only the standard library and initialises before the SDKs.
package gcstart

import (
	"os"
	"runtime/debug"
)

// Percent is the runner's GC target unless GOGC is set: the heap may grow
// to five times what is live between collections, which the memory limit
// (set by main from the function's memory) bounds.
const Percent = 400

func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
	}
}
