package nodes

import (
	"context"
	"strings"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/protocol"
)

// failKind fails with with.message and with.code (FAILED by default).
type failKind struct{}

var failWith = document.With{Doc: "The error the node fails with.", Fields: []document.Field{
	{Name: "message", Type: document.Text, Doc: "The error's message."},
	{Name: "code", Type: document.Type{Kind: document.String, Pattern: `^[A-Z][A-Z0-9_]*$|\$\{\{`, Match: isErrorCodeOrTemplate}, Default: `"FAILED"`, Doc: "The error's code, UPPER_SNAKE_CASE."},
}}

func (*failKind) With() *document.With { return &failWith }

// Pure: a fail node reads nothing but its with.
func (*failKind) Pure() bool { return true }

func (*failKind) Prepare(c *engine.Compiler) engine.Step {
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
		if !isErrorCode(code) {
			return nil, engine.Errorf(protocol.CodeExpressionError, "with.code %q must be UPPER_SNAKE_CASE", code)
		}
		c = protocol.Code(code)
	}
	return nil, &engine.NodeError{Code: c, Message: msg}
}

// isErrorCodeOrTemplate is fail's code pattern, in Go.
func isErrorCodeOrTemplate(s string) bool { return isErrorCode(s) || strings.Contains(s, "${{") }

func isErrorCode(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if b := s[i]; !(b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}
