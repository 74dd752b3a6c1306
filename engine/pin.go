package engine

import (
	"encoding/json"
	"fmt"

	"github.com/runnerd/lambda-runner/protocol"
)

// Pin is a node's result taken as given: a pinned node is not run, its
// with is not evaluated, and it ends with Output, or fails with Error. Its
// events still name its own type. Pins are how `runnerctl test` replays a
// run; they are set in Go only, never from a request.
type Pin struct {
	// Output is the node's output, a JSON value; used when Error is nil.
	Output json.RawMessage
	// Error, when not nil, is the failure the node ends with (its Code and
	// Message).
	Error *NodeError
}

// pinned is a Pin decoded.
type pinned struct {
	out any
	err *NodeError
}

// SetPins pins nodes of x before it runs: a key is a node's id as its
// events name it ("each[2].fetch" for one map iteration) or its bare id
// (every instance of it). An output that is not JSON is refused, naming
// the node.
func (x *Execution) SetPins(pins map[string]Pin) error {
	m := make(map[string]pinned, len(pins))
	for id, p := range pins {
		if p.Error != nil {
			code := p.Error.Code
			if code == "" {
				code = protocol.CodeFailed
			}
			m[id] = pinned{err: &NodeError{Code: code, Message: p.Error.Message}}
			continue
		}
		var v any
		if len(p.Output) > 0 {
			var err error
			if v, err = decodeJSON(p.Output); err != nil {
				return fmt.Errorf("node %q: output: %w", id, err)
			}
		}
		m[id] = pinned{out: v}
	}
	x.pins = m
	return nil
}

// pin returns the pin of the node instance id (bare id n), if any.
func (x *Execution) pin(id, n string) (pinned, bool) {
	if x.pins == nil {
		return pinned{}, false
	}
	if p, ok := x.pins[id]; ok {
		return p, true
	}
	p, ok := x.pins[n]
	return p, ok
}
