package lang

import (
	"encoding/json"
	"reflect"
	"slices"
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

// fastForm is an expression evaluated without the VM: only what an
// evaluation reads. A request meets the forms of its workflow out of the
// CPU's caches (the client, the kernel and other work ran since the last
// one), and each cache line an evaluation touches then costs a read from
// memory (bench/BASELINE.md, Rounds 15 and 16). So what a form is made of
// (its root, path and operator: formSrc) stays with the parser, and a form
// holds what its evaluation does, worked out once when it is built (build).
type fastForm struct {
	kind  formKind
	field stateField // of a formNodes: the field of the node's state read
	op    fastOp     // of a formOp: its operator, for apply
	// Each kind's fields lie together after kind, an operator's first and
	// a literal's next, so that each reads as few lines as it can.
	//
	// apply, for a formOp, is fastOps[op].apply, kept here so that an
	// evaluation reads it from the form's line rather than the table's.
	apply func(a, b any) any
	l, r  *fastForm
	lit   any
	// ref is where a RefEnv last found the node a formNodes reads (0:
	// nowhere yet). The form is shared by every workflow with the same
	// text, so the Env must check what it reads back.
	ref  atomic.Uint64
	rest []string // fields read by name after the root (and a node's field)
	id   string   // of a formNodes: the node's id, looked up when ref does not hold it
	// restBuf holds rest when it is one field, as most are: a form
	// costs no allocation of its own for it.
	restBuf [1]string
}

// formSrc is what a fast form is made of, as the parser reads it (from
// expr's tree, fill, or from the text, quickParser): a literal, or a root
// and the fields read from it by name, in order.
type formSrc struct {
	lit   any
	isLit bool
	root  string // a name in the environment
	path  []string
	// pathBuf holds short paths, on the reader's stack.
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

// fastOp is a formOp's operator: its index in fastOps.
type fastOp uint8

// opOf returns the fastOp named op, and false for an operator fast forms
// do not apply.
func opOf(op string) (fastOp, bool) {
	for i, o := range fastOps {
		if o.name == op {
			return fastOp(i), true
		}
	}
	return 0, false
}

// build makes f the form of s, whose path is path (s.path, or the reader's
// copy of it): its kind and, for a reference, the fields read past its
// root. Nothing of s's own storage is kept: the fields are copied into f's
// buffer when they fit, else into a slice of their own.
func (f *fastForm) build(s *formSrc, path []string) {
	*f = fastForm{}
	switch {
	case s.isLit:
		f.kind, f.lit = formLit, s.lit
		return
	case s.root == "nodes":
		if len(path) < 2 || path[1] != "output" && path[1] != "status" {
			return // formVM
		}
		f.kind, f.id = formNodes, path[0]
		if path[1] == "status" {
			f.field = fieldStatus
		}
		path = path[2:]
	case s.root == "input":
		f.kind = formInput
	case s.root == "execution":
		f.kind = formExecution
	default:
		return // formVM
	}
	switch {
	case len(path) == 0:
	case len(path) <= len(f.restBuf):
		f.rest = f.restBuf[:copy(f.restBuf[:], path)]
	default:
		f.rest = slices.Clone(path)
	}
}

// buildOp makes f the operator op applied to l and r.
func (f *fastForm) buildOp(op fastOp, l, r *fastForm) {
	*f = fastForm{kind: formOp, op: op, apply: fastOps[op].apply, l: l, r: r}
}

// fastOps are the binary operators a fast form applies, when both operands
// are numbers, with the VM's own functions (runtime.Add for OpAdd, and so
// on): on numbers they take constant time and cannot fail, and anything
// else (a string to concatenate, a missing value) is left to the VM, its
// budget and its errors.
var fastOps = [...]struct {
	name  string
	apply func(a, b any) any
}{
	{"+", runtime.Add}, {"-", runtime.Subtract}, {"*", runtime.Multiply},
	{"/", func(a, b any) any { return runtime.Divide(a, b) }},
	{"<", func(a, b any) any { return runtime.Less(a, b) }}, {">", func(a, b any) any { return runtime.More(a, b) }},
	{"<=", func(a, b any) any { return runtime.LessOrEqual(a, b) }}, {">=", func(a, b any) any { return runtime.MoreOrEqual(a, b) }},
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
// operands of an operator are allocated together: a form costs an
// allocation or two, once per source text.
func (f *fastForm) fill(n ast.Node) bool {
	if v, ok := n.(*ast.BinaryNode); ok {
		op, ok := opOf(v.Operator)
		if !ok {
			return false
		}
		operands := new([2]fastForm)
		l, r := &operands[0], &operands[1]
		// Operations on literals alone are folded by the optimizer: leave
		// them to it.
		if !l.fill(v.Left) || !r.fill(v.Right) || l.kind == formLit && r.kind == formLit {
			return false
		}
		f.buildOp(op, l, r)
		return true
	}
	var s formSrc
	if !s.read(n) {
		return false
	}
	f.build(&s, s.path)
	return true
}

// read makes s what the fast form of n, a literal or a reference, is made
// of (see fill).
func (s *formSrc) read(n ast.Node) bool {
	switch v := n.(type) {
	case *ast.NilNode:
		*s = formSrc{isLit: true}
		return true
	case *ast.BoolNode:
		*s = formSrc{lit: v.Value, isLit: true}
		return true
	case *ast.StringNode:
		*s = formSrc{lit: v.Value, isLit: true}
		return true
	case *ast.FloatNode:
		*s = formSrc{lit: v.Value, isLit: true}
		return true
	case *ast.IntegerNode:
		if t := v.Type(); t == nil || t.Kind() != reflect.Int {
			return false
		}
		*s = formSrc{lit: v.Value, isLit: true}
		return true
	}
	// The path is filled from its end: the tree holds the last field
	// read at its top.
	depth := 0
	for m, ok := n.(*ast.MemberNode); ok; m, ok = m.Node.(*ast.MemberNode) {
		depth++
	}
	*s = formSrc{}
	path := s.pathBuf[:0]
	if depth > len(s.pathBuf) {
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
			s.root, s.path = v.Value, path
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
