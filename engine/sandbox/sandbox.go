// Package sandbox runs the JavaScript of code nodes in worker processes: an
// executable of their own (the command functions/codeworker, which calls
// engine/sandbox/worker's Main) started with WorkerArg, one evaluation at a
// time each, under a kernel limit on its memory, killed by
// the parent when the evaluation's context ends. No engine run in process
// can be trusted to stop or to stay inside a memory bound (a regex that
// backtracks, a built-in that allocates gigabytes in one call); a process
// can, whatever it is doing. This package is the parent's side and links no
// JavaScript engine, nor its parser: a body's syntax check before
// acceptance (Pool.Check) is answered by a worker too.
package sandbox

import (
	"fmt"
)

// DefaultMemoryBytes is a worker's memory limit when Options.MemoryBytes is
// zero.
const DefaultMemoryBytes int64 = 64 << 20

// Kind says how an evaluation failed.
type Kind string

// The ways an evaluation fails.
const (
	// KindThrown is an error the code threw (a syntax error, an exception,
	// a rejected promise, a return value JSON cannot hold).
	KindThrown Kind = "thrown"
	// KindMemory is the worker reaching its memory limit.
	KindMemory Kind = "memory"
	// KindStack is the code nesting deeper than the worker's stack allows
	// (unbounded recursion, a deeply nested JSON.parse).
	KindStack Kind = "stack"
	// KindOutput is a return value over Request.MaxOutputBytes.
	KindOutput Kind = "output"
	// KindLogs is console output over Request.MaxLogBytes.
	KindLogs Kind = "logs"
	// KindCrashed is a worker that died for another reason, or could not
	// be started.
	KindCrashed Kind = "crashed"
	// KindTimeout is an evaluation that ran past EvalOptions.Timeout.
	KindTimeout Kind = "timeout"
)

// Error is a failed evaluation. Line and Column, when not zero, locate
// the error in the code (1-based, the function body's first line being 1).
type Error struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (line %d, column %d)", e.Message, e.Line, e.Column)
	}
	return e.Message
}
