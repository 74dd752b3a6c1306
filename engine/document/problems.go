package document

import (
	"errors"
	"fmt"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/protocol"
)

// Problems collects the problems found before acceptance: errors, which
// refuse the request, and warnings, which only Validate shows.
type Problems struct {
	inv      protocol.Invalid
	warnings []protocol.Detail
	// covered holds the paths the workflow schema already found fault
	// with. Checking goes on past schema errors (every problem in one
	// pass), and a later check of a value under one of them would only
	// restate it, so it is dropped.
	covered map[string]bool
	// Bare is set when a workflow document is checked without a request.
	Bare bool
	// busy is a check the runner could not make in time for want of
	// resources (a code node's syntax check, the sandbox busy): not a
	// problem of the request, which may be sent again (ErrBusy).
	busy *protocol.Detail
}

// Addf records a problem at path, unless a problem at or above path was
// already reported (cover).
func (d *Problems) Addf(path, format string, args ...any) {
	if d.isCovered(path) {
		return
	}
	d.inv.Add(path, format, args...)
}

// NeedsRuntimef records a problem that only the request's runtime payload
// can settle (a toolset, a model role, a child workflow, a secret it names).
// A bare workflow document, checked without a request, has no runtime yet:
// there it is a warning, so that `runnerctl validate` does not refuse what
// the server will supply.
func (d *Problems) NeedsRuntimef(path, format string, args ...any) {
	if d.Bare {
		d.Warnf(path, format+" (checked as a bare document: the request's runtime must supply it)", args...)
		return
	}
	d.Addf(path, format, args...)
}

// The expression language reports its problems to the list.
var _ lang.Problems = (*Problems)(nil)

// Invalid records a problem the expression language found.
func (d *Problems) Invalid(path, msg string) { d.Addf(path, "%s", msg) }

// NeedsRuntime records a problem of an expression that only the runtime
// payload settles (see NeedsRuntimef).
func (d *Problems) NeedsRuntime(path, msg string) { d.NeedsRuntimef(path, "%s", msg) }

// Warn records a warning of the expression language.
func (d *Problems) Warn(path, msg string) { d.Warnf(path, "%s", msg) }

// Warnf records a problem that does not refuse the request.
func (d *Problems) Warnf(path, format string, args ...any) {
	if d.isCovered(path) {
		return
	}
	if len(d.warnings) >= protocol.MaxDetails {
		return // bounded as errors are
	}
	w := protocol.Invalid{}
	w.Add(path, format, args...)
	d.warnings = append(d.warnings, w.Details...)
}

// cover marks path as reported: later problems at or under it are dropped.
func (d *Problems) cover(path string) {
	if d.covered == nil {
		d.covered = map[string]bool{}
	}
	d.covered[path] = true
}

// isCovered reports whether path or one of its ancestors is covered, with
// one lookup per path segment and no allocation.
func (d *Problems) isCovered(path string) bool {
	if len(d.covered) == 0 {
		return false
	}
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '.' || path[i] == '[' {
			if d.covered[path[:i]] {
				return true
			}
		}
	}
	return false
}

// Len is how many problems refuse the request, a check that could not be
// made counted as one.
func (d *Problems) Len() int {
	if d.busy != nil {
		return len(d.inv.Details) + 1
	}
	return len(d.inv.Details)
}

// Err returns the request's problems, or, when it has none but a check
// could not be made, an error wrapping ErrBusy.
func (d *Problems) Err() error {
	if len(d.inv.Details) == 0 {
		if d.busy != nil {
			return fmt.Errorf("%w: %s: %s", ErrBusy, d.busy.Path, d.busy.Message)
		}
		return nil
	}
	inv := d.inv
	return &inv
}

// SetBusy records the first check the runner could not make in time.
func (d *Problems) SetBusy(path, format string, args ...any) {
	if d.busy == nil {
		d.busy = &protocol.Detail{Path: path, Message: fmt.Sprintf(format, args...)}
	}
}

// ErrBusy is what Err wraps (and the engine's Prepare and PrepareBody
// fail with) when the request has no problem found but a check of it
// could not be made in time for want of resources (a code node's syntax
// check while the sandbox's workers are busy checking others): the
// request is not at fault, and may be sent again later (the handler
// answers 503 with Retry-After).
var ErrBusy = errors.New("the runner is busy")

// AddErr records err under path, spreading joined errors and field errors
// into separate details.
func (d *Problems) AddErr(path string, err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			d.AddErr(path, e)
		}
		return
	}
	// The adapters' own field errors carry the request path they found the
	// problem at, and messages already free of secrets.
	if fe, ok := err.(*protocol.Detail); ok {
		d.Addf(fe.Path, "%s", fe.Message)
		return
	}
	if inv, ok := err.(*protocol.Invalid); ok {
		d.inv.Merge(inv)
		return
	}
	d.Addf(path, "%v", err)
}

// Errors are the problems that refuse the request, in the order found.
func (d *Problems) Errors() []protocol.Detail { return d.inv.Details }

// Warnings are the problems that do not refuse the request (Validate
// shows them).
func (d *Problems) Warnings() []protocol.Detail { return d.warnings }

// Busy is the first check the runner could not make in time, or nil.
func (d *Problems) Busy() *protocol.Detail { return d.busy }
