// Package syntax checks a code node's function body with goja's parser
// (no runtime), as a sandbox worker compiles it. The worker answers the
// runner's check requests with it (engine/sandbox, Pool.Check), so that
// the bootstrap links no JavaScript parser; Checker does the same check
// in process for what validates documents without running them
// (runnerctl validate).
package syntax

import (
	"context"
	"errors"

	"github.com/dop251/goja/parser"

	"github.com/runnerd/lambda-runner/engine/sandbox"
)

// Check parses a function body as a worker would compile it and returns
// its first syntax error, located in the body, or nil. Nesting deeper
// than sandbox.MaxNesting is refused before it parses.
func Check(code string) *sandbox.Error {
	if err := sandbox.CheckNesting(code); err != nil {
		return err
	}
	_, err := parser.ParseFile(nil, "code", sandbox.Wrap(code), 0)
	if err == nil {
		return nil
	}
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		e := list[0]
		return sandbox.SyntaxError(code, e.Message, e.Position.Line, e.Position.Column)
	}
	return &sandbox.Error{Kind: sandbox.KindThrown, Message: "SyntaxError: " + err.Error()}
}

// Checker checks code nodes in process and runs none: the engine's
// Services.Code where documents are validated but never executed
// (runnerctl validate, tests of Prepare). The zero value is ready.
type Checker struct{}

// Check is Check, as an error; it parses in process, at once, and so
// never waits for ctx.
func (Checker) Check(_ context.Context, code string) error {
	if err := Check(code); err != nil {
		return err
	}
	return nil
}

// EvalWith refuses: a Checker runs no code.
func (Checker) EvalWith(context.Context, sandbox.Request, sandbox.EvalOptions) (*sandbox.Reply, error) {
	return nil, &sandbox.Error{Kind: sandbox.KindCrashed, Message: "this runner checks code nodes but runs none (no sandbox worker)"}
}
