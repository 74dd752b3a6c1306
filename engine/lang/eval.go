package lang

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/expr-lang/expr"
	"github.com/runnerd/lambda-runner/protocol"
)

// Env is what expressions see at run time: the engine's scope.
type Env interface {
	// Input is the execution's (or the child workflow's) input.
	Input() any
	// Execution is the execution object ({id, …}).
	Execution() map[string]any
	// Node returns the status and output of an ended node in scope, for
	// the direct reading of nodes.<id>.status and .output.
	Node(id string) (status string, output any, ok bool)
	// State returns the expression view of an ended node's state:
	// {status, output, error}.
	State(id string) (map[string]any, bool)
	// Item returns a map iteration's item and index, ok outside none.
	Item() (item any, index int, ok bool)
}

// A RefEnv is an Env that reads a node through the memory of the
// reference naming it: ref is the compiled reference's own word, 0 until
// the Env first writes it, which the Env may use to find the node again
// without looking its id up (in a workflow of 10,000 nodes, a map of
// 10,000 ids each time). The same reference is evaluated against the Envs
// of every workflow that has its text, at once, so the Env must check
// that what it reads back is its own; ref is safe for concurrent use.
type RefEnv interface {
	Env
	// NodeRef is Node for the reference whose memory is ref.
	NodeRef(id string, ref *atomic.Uint64) (status string, output any, ok bool)
}

// Evaluator evaluates the expressions of one template against an Env,
// building the VM's environment once, under one Budget. It is used by one
// goroutine; the zero value is ready for Init.
type Evaluator struct {
	env Env
	// up says which nodes the template may read by a computed id or
	// whole; nil: none but those it names.
	up Upstream
	// budget bounds the evaluation and carries its context: every
	// expression of the template shares it.
	budget exprBudget
	bound  bool // the budget's functions are in vars
	// all: the template reads nodes whole (see Expression.all).
	all bool
	// bulky counts (up to 2) the values the template's expressions gave
	// that may be large (collections, long strings), and built says that
	// one of them was a collection the VM returned: the evaluation's
	// value is then measured before it is handed on (see settle). They
	// sit in the padding after the bools: an Evaluator is allocated with
	// every attempt.
	bulky uint8
	built bool
	// refs are the node ids the template names.
	refs    []string
	secrets map[string]any
	vars    map[string]any
}

// A ValueBound is an Env that says how large, written out as a tree (as
// every encoder and SizeOf see it), a template's value may be: what the
// values in scope may hold without sharing (the input, the node outputs,
// an evaluation's own allocations). A value over it is held more than once
// (let a1 = [a0, a0]; … doubles with each let): its encodings and walks
// would be exponentially larger than the memory it holds.
type ValueBound interface {
	MaxValueBytes() int64
}

// DefaultMaxValueBytes is the bound of a template's value when the Env
// sets none.
const DefaultMaxValueBytes = 256 << 20

// NewEvaluator returns an Evaluator initialized with Init.
func NewEvaluator(ctx context.Context, env Env, t Template, b Budget, up Upstream) *Evaluator {
	ev := new(Evaluator)
	ev.Init(ctx, env, t, b, up)
	return ev
}

// Init makes ev evaluate t against env under b, stopping when ctx ends. up
// says which nodes t may read beyond those it names (nodes[id] with a
// computed id, or nodes whole): the upstream nodes of its node.
func (ev *Evaluator) Init(ctx context.Context, env Env, t Template, b Budget, up Upstream) {
	*ev = Evaluator{env: env, up: up, all: t.all && up != nil, refs: t.refs, budget: exprBudget{ctx: ctx, maxSteps: b.MaxSteps, maxMem: b.MaxMemory}}
}

// SetSecrets puts the execution's secret values in scope, for a template
// that UsesSecrets.
func (ev *Evaluator) SetSecrets(values map[string]any) { ev.secrets = values }

// Eval evaluates t. A failure is an *Error, or the error of an ended
// context (which the caller classifies: timeout, deadline, cancellation).
func (ev *Evaluator) Eval(t Template) (any, error) {
	if t.root == nil {
		return nil, nil
	}
	ev.bulky, ev.built = 0, false
	v, err := t.root.eval(ev)
	if err != nil {
		return nil, err
	}
	if ev.built || ev.bulky > 1 {
		if err := ev.settle(t, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// settle bounds the value a template hands on (a node's input, an http
// body, the workflow's output…), measured as every encoder and walk after
// it will see it: as a tree, a value held twice counted twice. Only an
// evaluation that built a collection or gathered more than one large value
// can hold one value more than once; a single reference is to a value
// already bounded (the input, a node output). The walk stops at the bound.
func (ev *Evaluator) settle(t Template, v any) error {
	limit := int64(DefaultMaxValueBytes)
	if vb, ok := ev.env.(ValueBound); ok {
		limit = vb.MaxValueBytes()
	}
	if size := SizeWithin(v, limit); size > limit {
		msg := fmt.Sprintf("the value would be written out as more than the %d bytes its scope can hold (a value held more than once, as let a = [b, b] does, is written out each time)", limit)
		if x, ok := t.root.(typed); ok {
			msg = fmt.Sprintf("expression %q: %s", x.e.src, msg)
		}
		return &Error{Code: protocol.CodeLimitExceeded, Message: msg, Err: &LimitError{What: "bytes", Limit: limit}}
	}
	return nil
}

// note counts a value an expression gave towards settle: vm is set when
// the VM computed it.
func (ev *Evaluator) note(v any, vm bool) {
	switch x := v.(type) {
	case nil, bool, int, float64:
		return
	case string:
		if len(x) >= bulkyString {
			ev.bulky = min(ev.bulky+1, 2)
		}
		return
	}
	if lenOf(v) > 0 {
		ev.bulky = min(ev.bulky+1, 2)
		ev.built = ev.built || vm
	}
}

// bulkyString is the length from which a string counts as large for settle:
// 20,000 expressions each giving a shorter one give at most 20 MB.
const bulkyString = 1 << 10

// Run evaluates one expression, as Eval does a template.
func (ev *Evaluator) Run(e *Expression) (any, error) { return ev.run(e) }

// What building nodes whole costs per visible node, charged to the
// evaluation before the map is built: a lookup of the node's state and a
// map entry, about 200 ns and 64 bytes. Unbudgeted, a chain of 10,000
// whose nodes read len(nodes) built 50 million entries in 10.7 s.
const (
	stepsPerState = 2
	bytesPerState = 64
)

func (ev *Evaluator) environment() (map[string]any, error) {
	if ev.vars != nil {
		return ev.vars, nil
	}
	refs := ev.refs
	if ev.all {
		refs = ev.up.Ancestors()
		n := int64(len(refs))
		if err := ev.budget.charge(1+n*stepsPerState, n*bytesPerState); err != nil {
			return nil, err
		}
	}
	nodes := make(map[string]any, len(refs))
	for _, id := range refs {
		if v, ok := ev.env.State(id); ok {
			nodes[id] = v
		}
	}
	vars := map[string]any{"input": ev.env.Input(), "nodes": nodes, "execution": ev.env.Execution()}
	if item, index, ok := ev.env.Item(); ok {
		vars["item"], vars["index"] = item, index
	}
	if ev.secrets != nil {
		vars["secrets"] = ev.secrets
	}
	ev.vars = vars
	return vars, nil
}

// node is nodes[id] for an id the expression computes: the state of a
// node the template may read that has ended, nil for any other string,
// as the map of them all would give. It looks the one node up instead
// of building that map: a chain of 10,000 whose nodes read
// nodes[id] took 10.7 s when each evaluation built it, 0.1 s so.
func (ev *Evaluator) node(id any) any {
	if err := ev.budget.charge(1+stringWork(id), 0); err != nil {
		panic(err)
	}
	s, ok := id.(string)
	if !ok {
		if id == nil {
			return nil
		}
		panic(fmt.Errorf("nodes is indexed by a node id, a string, not %s", withArticle(TypeName(id))))
	}
	if ev.up == nil || !ev.up.Visible(s) {
		return nil
	}
	if v, ok := ev.env.State(s); ok {
		return v
	}
	return nil
}

func (ev *Evaluator) run(e *Expression) (any, error) {
	if f := e.fast; f != nil {
		if v, ok := ev.fast(f); ok {
			ev.note(v, false)
			return v, nil
		}
	}
	prog, err := e.cp.program()
	if err != nil {
		return nil, exprError(e, err)
	}
	vars, err := ev.environment()
	if err != nil {
		return nil, exprError(e, err)
	}
	if e.budgeted && !ev.bound {
		// Only programs that loop, concatenate or allocate need the
		// budget functions: a plain reference costs nothing more.
		maps.Copy(vars, ev.budget.functions())
		ev.bound = true
	}
	if e.cp.indexed && vars["$node"] == nil {
		vars["$node"] = ev.node
	}
	out, err := expr.Run(prog, vars)
	if err != nil {
		return nil, explainedError(e, err, vars, &ev.budget)
	}
	ev.note(out, true)
	return out, nil
}

// Error is an evaluation that failed with a protocol code: LIMIT_EXCEEDED
// for a budget, EXPRESSION_ERROR for anything else. Its message names the
// expression.
type Error struct {
	Code    protocol.Code
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// exprError turns a failed evaluation into an *Error: a budget is
// LIMIT_EXCEEDED, an ended context is left to classify (TIMEOUT, deadline,
// cancellation), anything else is EXPRESSION_ERROR. The message of an
// expression that reads secrets names the failure without its operands.
func exprError(e *Expression, err error) error { return explainedError(e, err, nil, nil) }

// explainedError is exprError for a program that failed in vars, whose
// references its message may read again under b (explain.go).
func explainedError(e *Expression, err error, vars map[string]any, b *exprBudget) error {
	var le *LimitError
	if errors.As(err, &le) {
		return &Error{Code: protocol.CodeLimitExceeded, Message: fmt.Sprintf("expression %q: %s", e.src, le.Error()), Err: err}
	}
	var pe *PatternError
	if errors.As(err, &pe) {
		return &Error{Code: protocol.CodeLimitExceeded, Message: fmt.Sprintf("expression %q: %s", e.src, pe.Error()), Err: err}
	}
	var stopped *exprStopped
	if errors.As(err, &stopped) {
		return stopped
	}
	msg := firstLine(err.Error())
	if strings.Contains(msg, "memory budget exceeded") {
		return &Error{Code: protocol.CodeLimitExceeded, Message: fmt.Sprintf("expression %q: evaluation built collections of more elements than expressions may hold", e.src), Err: err}
	}
	if e.readsSecrets() {
		return &Error{Code: protocol.CodeExpressionError, Message: fmt.Sprintf("expression %q: %s", e.src, valueFreeReason(msg)), Err: err}
	}
	return &Error{Code: protocol.CodeExpressionError, Message: explain(e.src, err, vars, b), Err: err}
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
		return "a field or index was read from null or from a value that has none (values withheld: the expression reads secrets)"
	}
	return "evaluation failed (details withheld: the expression reads secrets)"
}

// AsArray accepts what an expression may yield for an array: a JSON
// array, or a typed slice, which expr-lang builds for ranges (1..3) and
// some builtins. Anything else is not an array.
func AsArray(v any) ([]any, bool) {
	if a, ok := v.([]any); ok {
		return a, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}
