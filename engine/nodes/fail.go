package nodes

import (
	"context"
	"regexp"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/protocol"
)

// failKind fails with with.message and with.code (FAILED by default).
type failKind struct{}

// Pure: a fail node reads nothing but its with.
func (failKind) Pure() bool { return true }

var codePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func (failKind) Prepare(c *engine.Compiler) engine.Step {
	c.With()
	c.RunsInline()
	return engine.StepFunc(runFail)
}

func runFail(_ context.Context, call *engine.Call) (any, error) {
	f := call.Fields()
	msg, _ := f.String("message")
	code, _ := f.String("code")
	if err := f.Err(); err != nil {
		return nil, err
	}
	if msg == "" {
		msg = "failed by a fail node"
	}
	c := protocol.CodeFailed
	if code != "" {
		if !codePattern.MatchString(code) {
			return nil, engine.Errorf(protocol.CodeExpressionError, "with.code %q must be UPPER_SNAKE_CASE", code)
		}
		c = protocol.Code(code)
	}
	return nil, &engine.NodeError{Code: c, Message: msg}
}
