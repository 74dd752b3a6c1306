package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runnerd/lambda-runner/engine/distribute"
	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// NodeError is a node's failure with its protocol code (protocol.CodeFailed,
// protocol.CodeHTTPError, …). Kinds return it to choose the code; any other
// error counts as FAILED, or as TIMEOUT/CANCELLED when the context says so.
type NodeError struct {
	Code    protocol.Code
	Message string
	// Err is the cause, kept for errors.Is/As; its text is not shown.
	Err error
	// logs are what a code node's console.log wrote before it failed,
	// shown in node.failed when traced.
	logs []string
	// queued is how long the attempt waited for a sandbox worker, shown
	// in node.failed when traced.
	queued time.Duration
}

func (e *NodeError) Error() string { return e.Message }
func (e *NodeError) Unwrap() error { return e.Err }

// Errorf returns a *NodeError with the given code.
func Errorf(code protocol.Code, format string, args ...any) *NodeError {
	err := fmt.Errorf(format, args...)
	return &NodeError{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// noRetry lists the codes that another attempt cannot change.
var noRetry = map[protocol.Code]bool{
	protocol.CodeExpressionError:      true,
	protocol.CodePermissionDenied:     true,
	protocol.CodeLimitExceeded:        true,
	protocol.CodeCodeError:            true,
	protocol.CodeOutputTooLarge:       true,
	protocol.CodeMemoryBudgetExceeded: true,
	protocol.CodeCancelled:            true,
	protocol.CodeDeadlineExceeded:     true,
	protocol.CodeHTTPBlocked:          true,
}

// errSuspended ends a node that waits for consent, its own or that of a
// node it runs inside itself (a map iteration, a child workflow): the node
// is recorded as suspended, not failed. A node's own request is a
// *suspended, which matches it with errors.Is; a composite whose sub-graph
// stopped because the execution is suspending returns errSuspended itself,
// the suspension being recorded already.
var errSuspended = errors.New("execution suspended")

// suspended is returned by a node that waits for consent: Call.Authorize
// returns it for a consent decision.
type suspended struct {
	action, resource string
}

func (s *suspended) Error() string {
	return fmt.Sprintf("consent required for %s %s", s.action, s.resource)
}

// Is makes every consent request an errSuspended.
func (s *suspended) Is(target error) bool { return target == errSuspended }

// classify turns whatever an attempt returned into a NodeError. attemptCtx
// is the attempt's context, execCtx the execution's: which one ended tells a
// node timeout from the execution deadline or a cancellation.
func classify(err error, attemptCtx, execCtx context.Context) *NodeError {
	var ne *NodeError
	if errors.As(err, &ne) && ne.Code != "" {
		return ne
	}
	if ce, ok := codedError(err).(*NodeError); ok {
		return ce
	}
	switch {
	case execCtx.Err() != nil && errors.Is(context.Cause(execCtx), errDeadline):
		return &NodeError{Code: protocol.CodeDeadlineExceeded, Message: "execution deadline exceeded", Err: err}
	case execCtx.Err() != nil && errors.Is(context.Cause(execCtx), context.DeadlineExceeded):
		// Inside a map or child workflow, execCtx is the sub-graph's: the
		// enclosing node's timeoutMs ended it, which is a timeout, not a
		// cancellation.
		return &NodeError{Code: protocol.CodeTimeout, Message: "enclosing node timed out", Err: err}
	case execCtx.Err() != nil:
		return &NodeError{Code: protocol.CodeCancelled, Message: "cancelled", Err: err}
	case attemptCtx.Err() != nil && errors.Is(attemptCtx.Err(), context.DeadlineExceeded):
		return &NodeError{Code: protocol.CodeTimeout, Message: "node timed out", Err: err}
	}
	return &NodeError{Code: protocol.CodeFailed, Message: err.Error(), Err: err}
}

// codedError returns err as a *NodeError when it is a failure, with its
// code, of a package below the engine that knows nothing of node errors:
// an evaluation's, or an author value's JSON cannot hold (engine/authorjson),
// both lang.Errors; a bound of what an execution learns from its secrets
// (engine/secrets); a distributed map's (engine/distribute). Other errors,
// nil included, are returned as they are.
func codedError(err error) error {
	if err == nil {
		return nil
	}
	if le := (*lang.Error)(nil); errors.As(err, &le) {
		return &NodeError{Code: le.Code, Message: le.Message, Err: le.Err}
	}
	if se := (*secrets.Error)(nil); errors.As(err, &se) {
		return &NodeError{Code: se.Code, Message: se.Message}
	}
	if de := (*distribute.Error)(nil); errors.As(err, &de) {
		return &NodeError{Code: de.Code, Message: de.Message}
	}
	return err
}

// errDeadline is the cause attached to the execution context when its
// deadline (the invocation's, less the reserve) passes.
var errDeadline = errors.New("deadline exceeded")

// whenNotBoolean is the failure of a `when` that gave v, not a boolean.
// A null is most often a misspelt name, which reads as null: why, when
// not empty, says where it came from (lang.Evaluator.WhyNull).
func whenNotBoolean(src string, v any, why string) *NodeError {
	hint := " (compare it, e.g. with == or !=)"
	switch {
	case v == nil && why != "":
		hint = ": " + why
	case v == nil:
		hint = ": is every name in it spelled right?"
	}
	return Errorf(protocol.CodeExpressionError, "when %q gave %s, not a boolean%s", src, JSONType(v), hint)
}

// ErrBusy is what Prepare and PrepareBody fail with when the request has
// no problem found but a check of it could not be made in time for want
// of resources (document.ErrBusy): the request is not at fault, and may
// be sent again later (the handler answers 503 with Retry-After).
var ErrBusy = document.ErrBusy

// RetryPolicy says how a failing node is tried again (document.Retry).
type RetryPolicy = document.Retry

// DefaultRetry is the policy a node's retry object starts from
// (document.DefaultRetry).
var DefaultRetry = document.DefaultRetry
