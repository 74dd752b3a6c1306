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
	// A with of value alone (the usual set) is compiled to the member:
	// evaluating it builds no object around the value (its map was a
	// third of what a chain node allocated).
	if m, ok := c.n.with.Member("value"); ok {
		c.n.with, c.n.valueOnly = m, true
	}
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
