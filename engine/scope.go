package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

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
	gr, i := s.lookup(id)
	if gr == nil || gr.states[i].status == "" {
		return nil, false
	}
	return gr.views.get(gr, i), true
}

// node returns the state of an ended node in scope.
func (s *scope) node(id string) (nodeState, bool) {
	gr, i := s.lookup(id)
	if gr == nil {
		return nodeState{}, false
	}
	st := gr.states[i]
	return st, st.status != ""
}

// lookup finds the graph run that holds node id, inner graphs shadowing
// outer ones, and the node's index in it; nil when no graph in scope has
// the node.
func (s *scope) lookup(id string) (*graphRun, int) {
	for c := s; c != nil; c = c.parent {
		if c.gr == nil {
			continue
		}
		if i, ok := c.gr.g.index[id]; ok {
			return c.gr, i
		}
	}
	return nil, 0
}

// evaluator evaluates the expressions of one template against a scope,
// building the environment once.
type evaluator struct {
	sc *scope
	// budget bounds the evaluation and carries its context: every
	// expression of the template shares it.
	budget exprBudget
	bound  bool // the budget's functions are in env
	// refs are the node ids to put in scope: the template's own, or every
	// visible one when it indexes nodes dynamically.
	refs    []string
	secrets map[string]any
	env     map[string]any
}

func newEvaluator(ctx context.Context, sc *scope, t Template, ancestors func() []string) *evaluator {
	ev := new(evaluator)
	ev.init(ctx, sc, t, ancestors)
	return ev
}

// init makes ev, a zero evaluator, evaluate t against sc.
func (ev *evaluator) init(ctx context.Context, sc *scope, t Template, ancestors func() []string) {
	l := sc.limits()
	*ev = evaluator{sc: sc, refs: t.refs, budget: exprBudget{ctx: ctx, maxSteps: l.MaxExprSteps, maxMem: l.MaxExprMemory}}
	if t.all && ancestors != nil {
		ev.refs = ancestors()
	}
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
	if f := e.cp.fast; f != nil {
		if v, ok := ev.fast(f); ok {
			return v, nil
		}
	}
	prog, err := e.cp.program()
	if err != nil {
		return nil, exprError(e, err)
	}
	env := ev.environment()
	if e.budgeted && !ev.bound {
		// Only programs that loop, concatenate or allocate need the
		// budget functions: a plain reference costs nothing more.
		maps.Copy(env, ev.budget.functions())
		ev.bound = true
	}
	out, err := expr.Run(prog, env)
	if err != nil {
		return nil, exprError(e, err)
	}
	return out, nil
}

// exprError turns a failed evaluation into the node's error: a budget is
// LIMIT_EXCEEDED, an ended context is left to classify (TIMEOUT, deadline,
// cancellation), anything else is EXPRESSION_ERROR. The message of an
// expression that reads secrets names the failure without its operands.
func exprError(e *expression, err error) error {
	var le *ExprLimitError
	if errors.As(err, &le) {
		return &NodeError{Code: protocol.CodeLimitExceeded, Message: fmt.Sprintf("expression %q: %s", e.src, le.Error()), Err: err}
	}
	var stopped *exprStopped
	if errors.As(err, &stopped) {
		return stopped
	}
	msg := firstLine(err.Error())
	if strings.Contains(msg, "memory budget exceeded") {
		return &NodeError{Code: protocol.CodeLimitExceeded, Message: fmt.Sprintf("expression %q: evaluation built collections of more elements than expressions may hold", e.src), Err: err}
	}
	if e.readsSecrets() {
		msg = valueFreeReason(msg)
	}
	return &NodeError{Code: protocol.CodeExpressionError, Message: fmt.Sprintf("expression %q: %s", e.src, msg), Err: err}
}

// valueFreeReason says why an evaluation failed in words that carry none of
// its operands: runtime messages quote values (a number that did not parse,
// a JSON character, an index), and the values may be secrets.
func valueFreeReason(msg string) string {
	switch {
	case strings.Contains(msg, "invalid syntax"), strings.Contains(msg, "parsing"):
		return "a value could not be converted to a number (value withheld: the expression reads secrets)"
	case strings.Contains(msg, "invalid operation"), strings.Contains(msg, "mismatched types"):
		return "an operator was applied to values of the wrong types (values withheld: the expression reads secrets)"
	case strings.Contains(msg, "out of range"):
		return "an index was out of range (values withheld: the expression reads secrets)"
	case strings.Contains(msg, "invalid character"), strings.Contains(msg, "JSON"):
		return "a value is not valid JSON (value withheld: the expression reads secrets)"
	case strings.Contains(msg, "cannot fetch"), strings.Contains(msg, "nil"):
		return "a field or index was read from a missing value (values withheld: the expression reads secrets)"
	}
	return "evaluation failed (details withheld: the expression reads secrets)"
}

// eval evaluates a template against the scope.
func (t Template) eval(ev *evaluator) (any, error) {
	if t.root == nil {
		return nil, nil
	}
	return t.root.eval(ev)
}

// limits returns the limits of the execution the scope belongs to.
func (s *scope) limits() Limits {
	for c := s; c != nil; c = c.parent {
		if c.gr != nil {
			return c.gr.r.x.limits
		}
	}
	return DefaultLimits()
}

// stateView builds the immutable expression view of an ended node.
// Expressions compare plain strings, so the typed status and code are
// converted: expr does not equate a named string type with a string.
func stateView(status protocol.NodeStatus, output any, ne *NodeError) map[string]any {
	v := map[string]any{"status": string(status), "output": output, "error": nil}
	if ne != nil {
		v["error"] = map[string]any{"code": string(ne.Code), "message": ne.Message}
	}
	return v
}
