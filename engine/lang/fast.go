package lang

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// Most expressions in workflows are a plain reference (input.name,
// nodes.a.output.x) or a literal. Compiling them for the VM and building
// the VM's environment to run them cost more than the reference itself, so
// they are evaluated directly: names are still checked on the parsed tree
// (compileExpr), and whenever the direct reading could differ from the VM's
// (a missing node, a value that is not a JSON object where a field is read,
// a value of a type JSON does not decode to) the evaluation runs the
// program instead, compiled on first need, so that results and errors stay
// exactly the VM's.

// fastForm is an expression evaluated without the VM.
//
// An evaluation reads only the fields before isLit, which finish derives
// from those after: a request meets the forms of its workflow out of the
// CPU's caches (the client, the kernel and other work ran since the last
// one), and each cache line an evaluation touches then costs a read from
// memory. Evaluating nodes.<id>.output + 1 so reads the three forms' first
// lines and not the text its names were sliced from (bench/BASELINE.md,
// Round 15).
type fastForm struct {
	kind  formKind
	field stateField // of a formNodes: the field of the node's state read
	// ref is where a RefEnv last found the node a formNodes reads (0:
	// nowhere yet). The form is shared by every workflow with the same
	// text, so the Env must check what it reads back.
	ref  atomic.Uint64
	id   string   // of a formNodes: the node's id
	rest []string // fields read by name after the root (and a node's field)
	// apply, for a formOp, is the binary operator applied to l and r
	// (its fastOps function, looked up once when the form is made).
	apply func(a, b any) any
	l, r  *fastForm
	lit   any

	// What the form is made of.
	isLit   bool
	root    string   // a name in the environment
	path    []string // fields read by name, in order
	op      string   // the operator of a formOp
	pathBuf [3]string
}

// formKind is what a fast form's evaluation does.
type formKind uint8

const (
	formVM        formKind = iota // none: the VM evaluates it (item, index, other fields)
	formLit                       // lit
	formOp                        // apply(l, r)
	formNodes                     // a node's status or output, then rest
	formInput                     // the input, then rest
	formExecution                 // the execution object, then rest
)

// stateField is the field of a node's state a formNodes reads.
type stateField uint8

const (
	fieldOutput stateField = iota
	fieldStatus
)

// finish derives what an evaluation reads from what f is made of: its
// kind and, for a reference, the fields read past its root.
func (f *fastForm) finish() {
	switch {
	case f.isLit:
		f.kind = formLit
	case f.op != "":
		f.kind = formOp
	case f.root == "nodes":
		if len(f.path) < 2 || f.path[1] != "output" && f.path[1] != "status" {
			f.kind = formVM
			return
		}
		f.kind, f.id, f.rest = formNodes, f.path[0], f.path[2:]
		if f.path[1] == "status" {
			f.field = fieldStatus
		}
	case f.root == "input":
		f.kind, f.rest = formInput, f.path
	case f.root == "execution":
		f.kind, f.rest = formExecution, f.path
	default:
		f.kind = formVM
	}
}

// fastOps are the binary operators a fast form applies, when both operands
// are numbers, with the VM's own functions (runtime.Add for OpAdd, and so
// on): on numbers they take constant time and cannot fail, and anything
// else (a string to concatenate, a missing value) is left to the VM, its
// budget and its errors.
var fastOps = map[string]func(a, b any) any{
	"+": runtime.Add, "-": runtime.Subtract, "*": runtime.Multiply, "/": func(a, b any) any { return runtime.Divide(a, b) },
	"<": func(a, b any) any { return runtime.Less(a, b) }, ">": func(a, b any) any { return runtime.More(a, b) },
	"<=": func(a, b any) any { return runtime.LessOrEqual(a, b) }, ">=": func(a, b any) any { return runtime.MoreOrEqual(a, b) },
}

// fastFormOf returns the fast form of a checked tree, or nil.
func fastFormOf(n ast.Node) *fastForm {
	f := new(fastForm)
	if !f.fill(n) {
		return nil
	}
	return f
}

// fill makes f the fast form of n, reporting false when n has none. The
// operands of an operator are allocated together, and short paths are
// held in f: a form costs an allocation or two, once per source text.
func (f *fastForm) fill(n ast.Node) bool {
	if !f.read(n) {
		return false
	}
	f.finish()
	return true
}

// read makes f what the fast form of n is made of (see fill).
func (f *fastForm) read(n ast.Node) bool {
	switch v := n.(type) {
	case *ast.NilNode:
		*f = fastForm{isLit: true}
		return true
	case *ast.BoolNode:
		*f = fastForm{lit: v.Value, isLit: true}
		return true
	case *ast.StringNode:
		*f = fastForm{lit: v.Value, isLit: true}
		return true
	case *ast.FloatNode:
		*f = fastForm{lit: v.Value, isLit: true}
		return true
	case *ast.IntegerNode:
		if t := v.Type(); t == nil || t.Kind() != reflect.Int {
			return false
		}
		*f = fastForm{lit: v.Value, isLit: true}
		return true
	case *ast.BinaryNode:
		apply := fastOps[v.Operator]
		if apply == nil {
			return false
		}
		operands := new([2]fastForm)
		l, r := &operands[0], &operands[1]
		// Operations on literals alone are folded by the optimizer: leave
		// them to it.
		if !l.fill(v.Left) || !r.fill(v.Right) || l.isLit && r.isLit {
			return false
		}
		*f = fastForm{op: v.Operator, apply: apply, l: l, r: r}
		return true
	}
	// The path is filled from its end: the tree holds the last field
	// read at its top.
	depth := 0
	for m, ok := n.(*ast.MemberNode); ok; m, ok = m.Node.(*ast.MemberNode) {
		depth++
	}
	*f = fastForm{}
	path := f.pathBuf[:0]
	if depth > len(f.pathBuf) {
		path = make([]string, depth)
	} else {
		path = path[:depth]
	}
	for {
		switch v := n.(type) {
		case *ast.IdentifierNode:
			// The budget functions are typed in the environment: leave
			// them to the VM (compileExpr rejects them anyway).
			if strings.HasPrefix(v.Value, "$") {
				return false
			}
			f.root, f.path = v.Value, path
			return true
		case *ast.MemberNode:
			prop, ok := v.Property.(*ast.StringNode)
			if !ok || v.Optional || v.Method {
				return false
			}
			depth--
			path[depth] = prop.Value
			n = v.Node
		default:
			return false
		}
	}
}

// isFastNumber reports whether v is a number a fast operator applies to.
func isFastNumber(v any) bool {
	switch v.(type) {
	case int, float64:
		return true
	}
	return false
}

// program returns the VM program of c, compiling it on first need when c
// has a fast form.
func (c *compiled) program() (*vm.Program, error) {
	c.once.Do(func() {
		if c.prog != nil {
			return
		}
		var full *compiled
		full, c.progErr = compileBudgeted(c.src, false)
		if c.progErr == nil {
			c.prog = full.prog
		}
	})
	return c.prog, c.progErr
}

// fast evaluates e's fast form, reporting false when the VM must run it.
func (ev *Evaluator) fast(f *fastForm) (any, bool) {
	var v any
	switch f.kind {
	case formLit:
		return f.lit, true
	case formOp:
		a, ok := ev.fast(f.l)
		if !ok || !isFastNumber(a) {
			return nil, false
		}
		b, ok := ev.fast(f.r)
		if !ok || !isFastNumber(b) {
			return nil, false
		}
		return f.apply(a, b), true
	case formNodes:
		var status string
		var ok bool
		if re, isRef := ev.env.(RefEnv); isRef {
			status, v, ok = re.NodeRef(f.id, &f.ref)
		} else {
			status, v, ok = ev.env.Node(f.id)
		}
		if !ok {
			return nil, false
		}
		if f.field == fieldStatus {
			v = status
		}
	case formInput:
		v = ev.env.Input()
	case formExecution:
		v = ev.env.Execution()
	default:
		return nil, false
	}
	for _, k := range f.rest {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		v = m[k]
	}
	switch v.(type) {
	case nil, string, bool, float64, int, int64, json.Number, map[string]any, []any:
		return v, true
	}
	return nil, false
}
