package engine

import (
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/runnerd/lambda-runner/protocol"
)

// scope is what expressions see at run time: the input, the states of
// upstream nodes (inner graphs shadow outer ones), the execution, and inside
// a map the item and index.
type scope struct {
	parent  *scope
	gr      *graphRun
	input   any
	exec    map[string]any
	item    any
	index   int
	hasItem bool
}

// state returns the expression view of a node's state: {status, output,
// error}. Only nodes that have ended have one.
func (s *scope) state(id string) (map[string]any, bool) {
	for c := s; c != nil; c = c.parent {
		if c.gr == nil {
			continue
		}
		if i, ok := c.gr.g.index[id]; ok {
			v := c.gr.states[i].view
			return v, v != nil
		}
	}
	return nil, false
}

// evaluator evaluates the expressions of one template against a scope,
// building the environment once.
type evaluator struct {
	sc *scope
	// refs are the node ids to put in scope: the template's own, or every
	// visible one when it indexes nodes dynamically.
	refs    []string
	secrets map[string]any
	env     map[string]any
}

func newEvaluator(sc *scope, t Template, ancestors []string) *evaluator {
	ev := &evaluator{sc: sc, refs: t.refs}
	if t.all {
		ev.refs = ancestors
	}
	return ev
}

func (ev *evaluator) environment() map[string]any {
	if ev.env != nil {
		return ev.env
	}
	nodes := make(map[string]any, len(ev.refs))
	for _, id := range ev.refs {
		if v, ok := ev.sc.state(id); ok {
			nodes[id] = v
		}
	}
	env := map[string]any{"input": ev.sc.input, "nodes": nodes, "execution": ev.sc.exec}
	for c := ev.sc; c != nil; c = c.parent {
		if c.hasItem {
			env["item"], env["index"] = c.item, c.index
			break
		}
	}
	if ev.secrets != nil {
		env["secrets"] = ev.secrets
	}
	ev.env = env
	return env
}

func (ev *evaluator) run(e *expression) (any, error) {
	out, err := expr.Run(e.prog, ev.environment())
	if err != nil {
		return nil, &NodeError{
			Code:    protocol.CodeExpressionError,
			Message: fmt.Sprintf("expression %q: %s", e.src, firstLine(err.Error())),
			Err:     err,
		}
	}
	return out, nil
}

// eval evaluates a template against the scope.
func (t Template) eval(ev *evaluator) (any, error) {
	if t.root == nil {
		return nil, nil
	}
	return t.root.eval(ev)
}

// stateView builds the immutable expression view of an ended node.
func stateView(status string, output any, ne *NodeError) map[string]any {
	v := map[string]any{"status": status, "output": output, "error": nil}
	if ne != nil {
		v["error"] = map[string]any{"code": ne.Code, "message": ne.Message}
	}
	return v
}
