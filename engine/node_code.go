package engine

import (
	"context"
	"errors"
	"time"

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

func (codeKind) Prepare(c *Compiler) Step {
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
	switch err := c.p.checkCode(code); {
	case err == nil:
	case errors.As(err, &se) && se.Kind == sandbox.KindThrown:
		c.Errorf("code", "node %q: %s at line %d, column %d", c.NodeID(), se.Message, se.Line, se.Column)
		return nil
	case errors.Is(err, sandbox.ErrBusy):
		// Not the author's fault: 503 and Retry-After (ErrBusy), unless
		// the request has problems of its own to report.
		c.p.d.SetBusy(c.Path("code"), "node %q: the code could not be checked within %v: %v; try again", c.NodeID(), codeCheckBudget(c.p.limits), err)
		return nil
	default:
		c.Errorf("code", "node %q: the code could not be checked: %v", c.NodeID(), err)
		return nil
	}
	c.With("code")
	return codeStep{code: code}
}

// codeCheckBudget bounds the time all the syntax checks of one request
// take together, from the first: 5 s, or a quarter of the longest
// execution when that is shorter (a function with a short timeout keeps
// most of it to run). Checks past it are not made: the request is
// answered 503 with Retry-After (ErrBusy), and the bodies checked by then
// are remembered valid, so that the request sent again gets further.
func codeCheckBudget(l Limits) time.Duration {
	return min(5*time.Second, l.MaxDuration/4)
}

// checkCode checks a code body's syntax within the request's budget for
// its checks (codeCheckBudget), which its first check starts.
func (p *prep) checkCode(code string) error {
	if p.checkBy.IsZero() {
		p.checkBy = time.Now().Add(codeCheckBudget(p.limits))
	}
	ctx, cancel := context.WithDeadline(context.Background(), p.checkBy)
	defer cancel()
	return p.e.Services.Code.Check(ctx, code)
}

type codeStep struct{ code string }

// timesItsWork: a code node's timeoutMs counts from when a sandbox worker
// starts on it, not while it waits its turn for one (attempt).
func (codeStep) timesItsWork() {}

func (s codeStep) Run(ctx context.Context, call *Call) (any, error) {
	l := call.Limits()
	// Sized, charged and encoded once (encodeAuthor), held until the
	// worker has answered: the frame is written from these bytes. More
	// than the worker may hold could never be parsed there.
	input, err := call.r.encodeAuthor(ctx, "with.input", call.WithMap()["input"], l.MaxCodeMemory)
	if err != nil {
		return nil, err
	}
	defer input.release()
	rep, err := call.codeRunner().EvalWith(ctx, sandbox.Request{
		Code: s.code, Input: input.B, MaxOutputBytes: l.MaxOutputBytes, MaxLogBytes: l.MaxCodeLogBytes,
	}, call.sandboxOptions())
	var se *sandbox.Error
	switch {
	case errors.As(err, &se) && se.Kind == sandbox.KindTimeout:
		return nil, Errorf(protocol.CodeTimeout, "node timed out: the code ran for its timeoutMs (%d)", call.n.timeout.Milliseconds())
	case errors.As(err, &se):
		return nil, codeError(se, l)
	case err != nil:
		return nil, err // ctx ended: the scheduler names it
	}
	call.logs = rep.Logs
	if err := protocol.CheckStructure(rep.Output, l.MaxDepth); err != nil {
		return nil, &NodeError{Code: protocol.CodeLimitExceeded, Message: "the return value nests deeper than maxDepth", Err: err, logs: rep.Logs}
	}
	out, err := decodeJSON(rep.Output)
	if err != nil {
		return nil, &NodeError{Code: protocol.CodeFailed, Message: "the sandbox returned malformed JSON", Err: err, logs: rep.Logs}
	}
	return out, nil
}

// codeError maps a sandbox failure to the node's code and message.
func codeError(se *sandbox.Error, l Limits) *NodeError {
	var ne *NodeError
	switch se.Kind {
	case sandbox.KindThrown:
		ne = Errorf(protocol.CodeCodeError, "%s", clipMessage(se.Error()))
	case sandbox.KindMemory:
		ne = Errorf(protocol.CodeLimitExceeded, "%s: over maxCodeMemoryBytes (%d)", se.Message, l.MaxCodeMemory)
	case sandbox.KindStack:
		ne = Errorf(protocol.CodeLimitExceeded, "%s", se.Message)
	case sandbox.KindLogs:
		ne = Errorf(protocol.CodeLimitExceeded, "%s, over maxCodeLogBytes", se.Message)
	case sandbox.KindOutput:
		ne = Errorf(protocol.CodeOutputTooLarge, "%s", se.Message)
	default:
		ne = Errorf(protocol.CodeFailed, "%s", se.Message)
	}
	ne.Err = se
	return ne
}
