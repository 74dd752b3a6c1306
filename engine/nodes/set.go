package nodes

import (
	"context"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/document"
)

// setKind outputs with.value.
type setKind struct{}

var setWith = document.With{Doc: "The value the node outputs.", Fields: []document.Field{
	{Name: "value", Type: document.AnyValue, Doc: "The node's output; templates in it are evaluated."},
}}

func (*setKind) With() *document.With { return &setWith }

// Pure: a set node reads nothing but its with.
func (*setKind) Pure() bool { return true }

func (*setKind) Prepare(c *engine.Compiler) engine.Step {
	// A with of value alone (the usual set) is compiled to the member:
	// evaluating it builds no object around the value (its map was a
	// third of what a chain node allocated).
	valueOnly := c.WithValue()
	c.RunsInline()
	if valueOnly {
		return engine.StepFunc(setValue)
	}
	return engine.StepFunc(setField)
}

// setValue is a set node's step when with is value alone: Call.With is
// the value.
func setValue(_ context.Context, call *engine.Call) (any, error) { return call.With, nil }

func setField(_ context.Context, call *engine.Call) (any, error) {
	return call.WithMap()["value"], nil
}
