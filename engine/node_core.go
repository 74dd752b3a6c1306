package engine

import (
	"context"
	"regexp"

	"github.com/runnerd/lambda-runner/protocol"
)

// setKind outputs with.value.
type setKind struct{}

func (setKind) Prepare(c *Compiler) Step {
	c.With()
	c.runsInline()
	// A with of value alone (the usual set) is evaluated without the
	// object around it: its map was a third of what a chain node
	// allocated.
	_, c.n.valueOnly = c.n.with.Member("value")
	return StepFunc(func(_ context.Context, call *Call) (any, error) {
		if call.n.valueOnly {
			return call.With, nil
		}
		return call.WithMap()["value"], nil
	})
}

// failKind fails with with.message and with.code (FAILED by default).
type failKind struct{}

var codePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func (failKind) Prepare(c *Compiler) Step {
	c.With()
	c.runsInline()
	return StepFunc(func(_ context.Context, call *Call) (any, error) {
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
				return nil, Errorf(protocol.CodeExpressionError, "with.code %q must be UPPER_SNAKE_CASE", code)
			}
			c = protocol.Code(code)
		}
		return nil, &NodeError{Code: c, Message: msg}
	})
}
