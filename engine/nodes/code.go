package nodes

import (
	"context"
	"errors"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/protocol"
)

// codeKind runs author-written JavaScript over JSON in a sandbox worker
// process (engine/sandbox, through Services.Code):
//
//	with: {code, input}
//	output: the function's return value
//
// code is the body of a function called with one argument, input (with.input
// evaluated as a template); code itself is taken as written, never
// templated. It is checked for syntax (by a worker: CodeRunner.Check) and
// size before acceptance. A thrown
// error is CODE_ERROR, a bound of the sandbox LIMIT_EXCEEDED (memory,
// stack, console output), a return value over maxOutputBytes
// OUTPUT_TOO_LARGE; timeoutMs, the deadline and a cancellation kill the
// worker. console.log lines travel in the attempt's node.completed or
// node.failed event (logs) when the request is traced. A code node has no
// side effect and asks no permission; it never sees secrets (with.input
// cannot name them).
type codeKind struct{}

var codeWith = document.With{Required: true, Doc: "JavaScript run in the sandbox.", Fields: []document.Field{
	{Name: "code", Type: document.Text, Required: true, Literal: true, Doc: "The body of a JavaScript function of one argument, input; its return value (JSON) is the node's output. Taken as written, never templated."},
	{Name: "input", Type: document.AnyValue, Doc: "The function's argument, templated."},
}}

func (*codeKind) With() *document.With { return &codeWith }

// Pure: what a code node's Prepare reads is its with and the engine's
// sandbox.
func (*codeKind) Pure() bool { return true }

// Available: code runs only on a runner with a sandbox.
func (*codeKind) Available(s *engine.Services) bool { return s.Code != nil }

func (*codeKind) Prepare(c *engine.Compiler) engine.Step {
	raw, _ := c.Raw("code")
	code, ok := raw.(string)
	if !ok {
		// The document's schema reports a missing or non-string code.
		return nil
	}
	if c.Engine().Services.Code == nil {
		c.Errorf("", "node %q: code nodes are not available on this runner (it has no sandbox)", c.NodeID())
		return nil
	}
	if max := c.Limits().MaxCodeBytes; len(code) > max {
		c.Errorf("code", "node %q: the code is %d bytes, over maxCodeBytes (%d)", c.NodeID(), len(code), max)
		return nil
	}
	// The syntax is checked by a sandbox worker (Pool.Check), the one
	// place a JavaScript parser is linked.
	var se *sandbox.Error
	switch err := c.CheckCode("code", code); {
	case err == nil:
	case errors.As(err, &se) && se.Kind == sandbox.KindThrown:
		c.Errorf("code", "node %q: %s at line %d, column %d", c.NodeID(), se.Message, se.Line, se.Column)
		return nil
	case errors.Is(err, sandbox.ErrBusy):
		// Not the author's fault: CheckCode has recorded it (503 and
		// Retry-After), unless the request has problems of its own.
		return nil
	default:
		c.Errorf("code", "node %q: the code could not be checked: %v", c.NodeID(), err)
		return nil
	}
	c.With("code")
	return &codeStep{code: code}
}

type codeStep struct{ code string }

// TimesItsWork: a code node's timeoutMs counts from when a sandbox worker
// starts on it, not while it waits its turn for one (Call.Code).
func (*codeStep) TimesItsWork() {}

func (s *codeStep) Run(ctx context.Context, call *engine.Call) (any, error) {
	out, err := call.Code(ctx, s.code, call.WithMap()["input"])
	if se := (*sandbox.Error)(nil); errors.As(err, &se) {
		return nil, codeError(se, call.Limits())
	}
	return out, err
}

// codeError maps a failure of the code to the node's code and message.
func codeError(se *sandbox.Error, l engine.Limits) *engine.NodeError {
	var ne *engine.NodeError
	switch se.Kind {
	case sandbox.KindThrown:
		ne = engine.Errorf(protocol.CodeCodeError, "%s", clipMessage(se.Error()))
	case sandbox.KindMemory:
		ne = engine.Errorf(protocol.CodeLimitExceeded, "%s: over maxCodeMemoryBytes (%d)", se.Message, l.MaxCodeMemory)
	case sandbox.KindStack:
		ne = engine.Errorf(protocol.CodeLimitExceeded, "%s", se.Message)
	case sandbox.KindLogs:
		ne = engine.Errorf(protocol.CodeLimitExceeded, "%s, over maxCodeLogBytes", se.Message)
	case sandbox.KindOutput:
		ne = engine.Errorf(protocol.CodeOutputTooLarge, "%s", se.Message)
	default:
		ne = engine.Errorf(protocol.CodeFailed, "%s", se.Message)
	}
	ne.Err = se
	return ne
}
