package lang

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// expr's VM has no context and counts only array elements against its
// memory budget, after the fact: a closure over a large input cannot be
// stopped and string `+` or repeat() can allocate gigabytes. Every program
// is therefore patched at compile time (see docs/workflows.md, "Expression
// limits"): each predicate body, each `+` without a number operand
// and each builtin that allocates becomes a call to one of the
// functions below, which charge a per-evaluation exprBudget before the work
// is done and check the evaluation's context as they go. The functions are
// put in the evaluation's environment under names starting with `$`, which
// a workflow cannot use: names are checked on the unpatched tree, where
// they are unknown.

// exprBudget bounds one evaluation (one template, `when` or output). It is
// used by one goroutine.
type exprBudget struct {
	ctx      context.Context
	steps    int64
	maxSteps int64
	mem      int64
	maxMem   int64
}

// Budget is what one evaluation may spend: the engine's maxExprSteps and
// maxExprMemory. A zero or negative field is no bound.
type Budget struct {
	MaxSteps  int64
	MaxMemory int64
}

// LimitError is an evaluation that went over one of its budgets.
type LimitError struct {
	What  string // "steps", "bytes" or "operation"
	Limit int64
	Cost  int64 // of the operation, for "operation"
}

func (e *LimitError) Error() string {
	switch e.What {
	case "steps":
		return fmt.Sprintf("evaluation ran more than maxExprSteps (%d) steps", e.Limit)
	case "operation":
		return fmt.Sprintf("one operation would cost %d steps, more than the %d (about 0.1 s of work) a single operation may take", e.Cost, e.Limit)
	}
	return fmt.Sprintf("evaluation would allocate more than maxExprMemory (%d bytes)", e.Limit)
}

// exprStopped is an evaluation stopped because its context ended: the
// node's timeout, the execution deadline or a disconnect.
type exprStopped struct{ cause error }

func (e *exprStopped) Error() string { return "evaluation stopped: " + e.cause.Error() }
func (e *exprStopped) Unwrap() error { return e.cause }

// ctxCheckEvery is how many steps pass between two looks at the context:
// a step is about 100 ns of work (cost.go), so the context is seen every
// ~0.1 ms, and before every operation charged more than a step.
const ctxCheckEvery = 1024

// charge counts steps and bytes about to be spent, and fails when a budget
// is exhausted, the one operation they are for is too large, or the context
// has ended.
func (b *exprBudget) charge(steps, bytes int64) error {
	if steps > MaxOperationSteps {
		return &LimitError{What: "operation", Limit: MaxOperationSteps, Cost: steps}
	}
	before := b.steps
	b.steps += steps
	if b.maxSteps > 0 && b.steps > b.maxSteps {
		return &LimitError{What: "steps", Limit: b.maxSteps}
	}
	if bytes > 0 {
		b.mem += bytes
		if b.maxMem > 0 && b.mem > b.maxMem {
			return &LimitError{What: "bytes", Limit: b.maxMem}
		}
	}
	if b.ctx != nil && (before/ctxCheckEvery != b.steps/ctxCheckEvery || steps > 1) {
		if err := b.ctx.Err(); err != nil {
			return &exprStopped{cause: context.Cause(b.ctx)}
		}
	}
	return nil
}

// functions returns the environment entries the patched programs call,
// bound to b. They have the signatures expr calls without reflection or an
// argument slice (one call per predicate iteration must stay cheap), so a
// spent budget cannot be returned as an error: it is raised as a panic, which
// the VM recovers into the evaluation's error.
func (b *exprBudget) functions() map[string]any {
	return map[string]any{
		"$step": func(v any) any {
			if err := b.charge(1, 0); err != nil {
				panic(err)
			}
			return v
		},
		"$stepAlloc": func(v any) any {
			if err := b.charge(1, 16); err != nil {
				panic(err)
			}
			return v
		},
		"$add": func(l, r any) any {
			out, err := b.add(l, r)
			if err != nil {
				panic(err)
			}
			return out
		},
		"$walk": func(x any, mode int) any {
			out, err := b.walk(x, mode)
			if err != nil {
				panic(err)
			}
			return out
		},
		"$in": func(needle, hay any) bool {
			out, err := b.in(needle, hay)
			if err != nil {
				panic(err)
			}
			return out
		},
		"$layout": func(layout string) string {
			// t.Format(layout) writes the time once per element of the
			// layout: about 5 ns a byte, the text up to 3 times the
			// layout (cost.go).
			n := int64(len(layout))
			if err := b.charge(1+n/16, 3*n); err != nil {
				panic(err)
			}
			return layout
		},
		"$zone": func(name string) string {
			// timezone(name) loads the zone (cost.go): the name is
			// passed through, typed, once charged.
			if err := b.charge(timezoneSteps, timezoneBytes); err != nil {
				panic(err)
			}
			return name
		},
		"$eq": func(l, r any) bool {
			out, err := b.equal(l, r)
			if err != nil {
				panic(err)
			}
			return out
		},
		"$cmp": func(l, r any, op string) bool {
			out, err := b.order(l, r, op)
			if err != nil {
				panic(err)
			}
			return out
		},
		"$weigh": func(v any) any {
			if err := b.charge(1+stringWork(v), 0); err != nil {
				panic(err)
			}
			return v
		},
		"$stepKey": func(v any) any {
			// The key is hashed (groupBy) or compared log2(n) times
			// (sortBy): sortKeyCompares covers any array that fits.
			if err := b.charge(1+sortKeyCompares*stringWork(v), 16); err != nil {
				panic(err)
			}
			return v
		},
		"$matches": func(s, p any) bool {
			out, err := b.matches(s, p)
			if err != nil {
				panic(err)
			}
			return out
		},
		"$call": func(params ...any) any {
			out, err := b.call(params...)
			if err != nil {
				panic(err)
			}
			return out
		},
	}
}

// add is `+` for operands that may be strings.
func (b *exprBudget) add(l, r any) (any, error) {
	if ls, ok := l.(string); ok {
		if rs, ok := r.(string); ok {
			n := int64(len(ls) + len(rs))
			if err := b.charge(1+n/64, n); err != nil {
				return nil, err
			}
			return ls + rs, nil
		}
	}
	if err := b.charge(1, 0); err != nil {
		return nil, err
	}
	return runtime.Add(l, r), nil
}

// allocating lists the builtins whose result grows with their arguments,
// and those that scan a string: $call charges them by builtinCost.
var allocating = map[string]bool{
	"repeat": true, "join": true, "split": true, "splitAfter": true, "replace": true,
	"upper": true, "lower": true, "trim": true, "trimPrefix": true, "trimSuffix": true,
	"string": true, "toJSON": true, "fromJSON": true, "toBase64": true, "fromBase64": true,
	"concat": true, "flatten": true, "reverse": true, "sort": true, "uniq": true,
	"keys": true, "values": true, "toPairs": true, "fromPairs": true, "take": true,
	"indexOf": true, "lastIndexOf": true, "hasPrefix": true, "hasSuffix": true,
	"int": true, "float": true, "duration": true, "date": true,
}

// walking lists the builtins that walk a collection the VM loops over or
// a Func reads whole: without a predicate (which is charged per
// iteration), their collection arguments are charged through $walk.
var walking = map[string]int{
	"max": walkNested, "min": walkNested, "mean": walkNested, "median": walkNestedSort, "sum": walkLinear,
	"count": walkLinear, "all": walkLinear, "none": walkLinear, "any": walkLinear, "one": walkLinear,
	"filter": walkLinear, "map": walkLinear, "find": walkLinear, "findIndex": walkLinear,
	"findLast": walkLinear, "findLastIndex": walkLinear, "groupBy": walkLinear, "sortBy": walkSort,
}

// call calls an allocating builtin after charging what it will cost.
func (b *exprBudget) call(params ...any) (any, error) {
	name, _ := params[0].(string)
	args := params[1:]
	steps, bytes := b.builtinCost(name, args)
	if err := b.charge(steps, bytes); err != nil {
		return nil, err
	}
	if name == "uniq" && len(args) == 1 {
		// Hashed, each comparison charged (cost.go): the builtin's is n².
		return b.uniq(args[0])
	}
	i, ok := builtin.Index[name]
	if !ok {
		return nil, fmt.Errorf("unknown function %s", name)
	}
	f := builtin.Builtins[i]
	switch {
	case f.Fast != nil && len(args) == 1:
		return f.Fast(args[0]), nil
	case f.Func != nil:
		return f.Func(args...)
	case f.Safe != nil:
		out, _, err := f.Safe(args...)
		return out, err
	}
	return nil, fmt.Errorf("%s cannot be called here", name)
}

// builtinCost estimates, before the call, the steps and bytes of a builtin:
// the elements it walks and the size of what it returns. Collections are
// measured whatever their kind ([]any, the []string split returns, …), and
// walks over nested values stop where the charge would fail.
func (b *exprBudget) builtinCost(name string, args []any) (steps, bytes int64) {
	str := func(i int) string {
		if i < len(args) {
			s, _ := args[i].(string)
			return s
		}
		return ""
	}
	num := func(i int) int64 {
		if i < len(args) {
			if n, ok := AsInt(args[i]); ok {
				return int64(n)
			}
		}
		return 0
	}
	length := func(i int) int64 {
		if i >= len(args) || args[i] == nil {
			return 0
		}
		v := reflect.ValueOf(args[i])
		switch v.Kind() {
		case reflect.Array, reflect.Slice, reflect.Map, reflect.String:
			return int64(v.Len())
		}
		return 0
	}
	switch name {
	case "repeat":
		n := max(num(1), 0)
		l := int64(len(str(0)))
		if l > 0 && n > (1<<62)/l {
			return 1, 1 << 62
		}
		return 1 + l*n/64, l * n
	case "join":
		// The elements (of a []any or a []string) and a separator between
		// each two are copied into the result; a []any is first copied
		// into a []string.
		n, strs, _ := elemStats(first(args))
		total := strs + int64(len(str(1)))*max(n-1, 0)
		return 1 + n + total/64, total + 16*n
	case "split", "splitAfter":
		s, sep := str(0), str(1)
		pieces := int64(len(s)) + 1
		if sep != "" {
			pieces = int64(strings.Count(s, sep)) + 1
		}
		return 1 + pieces, int64(len(s)) + 32*pieces
	case "replace":
		s, old, nw := str(0), str(1), str(2)
		n := int64(len(s)) + 1
		if old != "" {
			n = int64(strings.Count(s, old))
		}
		return 1 + int64(len(s))/64, int64(len(s)) + n*int64(len(nw))
	case "upper", "lower", "trim", "trimPrefix", "trimSuffix", "toBase64", "fromBase64":
		return 1 + int64(len(str(0)))/64, 2 * int64(len(str(0)))
	case "indexOf", "lastIndexOf", "hasPrefix", "hasSuffix":
		return 1 + int64(len(str(0)))/64, 0
	case "int", "float":
		// A failed parse quotes the text in its error.
		return 1 + int64(len(str(0)))/64, 2 * int64(len(str(0)))
	case "duration":
		// About 10 ns a byte; a failure quotes the text.
		return 1 + int64(len(str(0)))/16, 2 * int64(len(str(0)))
	case "date":
		return dateCost(args)
	case "fromJSON":
		return 1 + int64(len(str(0)))/8, 4 * int64(len(str(0)))
	case "toJSON":
		// MarshalIndent writes the compact form, then the indented one,
		// then the string is copied out of it. The walks stop where the
		// charge would fail: a value of shared references can have JSON
		// exponentially larger than itself.
		limit := b.sizeLimit(16, 2)
		indented := jsonSizeWithin(args[0], true, 0, limit)
		compact := jsonSizeWithin(args[0], false, 0, limit)
		return 1 + indented/16, compact + 2*indented
	case "string":
		n := jsonSizeWithin(args[0], false, 0, b.sizeLimit(16, 2))
		return 1 + n/16, 2 * n
	case "sort":
		n := length(0)
		_, longest := stringBytes(first(args))
		return 1 + n*int64(bitsLen(n))/2*(1+longest/cmpBytesPerStep), 32 * n
	case "uniq":
		// Each element is hashed (the comparisons of those that may be
		// equal are charged as uniq makes them).
		strs, _ := stringBytes(first(args))
		return 1 + length(0) + strs/cmpBytesPerStep, 32 * length(0)
	case "flatten":
		// Nested arrays are flattened all the way down: the result has
		// every leaf, counted with a walk that stops where the charge
		// would fail.
		var n int64
		limit := b.sizeLimit(1, 32)
		for _, a := range args {
			k, _, _ := nestedStats(a, limit)
			n += k
			limit = max(limit-k, 0)
		}
		return 1 + n, 32 * n
	}
	// Collections: concat, reverse, keys, values, toPairs, fromPairs,
	// take.
	var n int64
	for i := range args {
		n += length(i)
		if a, ok := args[i].([]any); ok && name == "concat" {
			for _, e := range a {
				if inner, ok := e.([]any); ok {
					n += int64(len(inner))
				}
			}
		}
	}
	return 1 + n, 32 * n
}

// budgetEnv declares the environment to the compiler: always a
// map[string]any, so names load with a map lookup rather than reflection,
// and the budget functions with their types, so that calls to them need
// neither. Other names stay unchecked here; compileExpr checks them against
// the scope.
var budgetEnv = []expr.Option{
	expr.Env(map[string]any{
		"$step":      (func(any) any)(nil),
		"$stepAlloc": (func(any) any)(nil),
		"$add":       (func(any, any) any)(nil),
		"$call":      (func(...any) any)(nil),
		"$walk":      (func(any, int) any)(nil),
		"$eq":        (func(any, any) bool)(nil),
		"$in":        (func(any, any) bool)(nil),
		"$zone":      (func(string) string)(nil),
		"$layout":    (func(string) string)(nil),
		"$cmp":       (func(any, any, string) bool)(nil),
		"$weigh":     (func(any) any)(nil),
		"$stepKey":   (func(any) any)(nil),
		"$matches":   (func(any, any) bool)(nil),
		"$node":      (func(any) any)(nil),
	}),
	expr.AllowUndefinedVariables(),
}

// budgetPatcher rewrites a checked tree as described at the top of the
// file. ast.Walk visits children first, so a node's operands are already
// patched when it is.
type budgetPatcher struct {
	patched bool
	// loops is set when the tree has a predicate: only then can one
	// comparison, key or lookup run many times, and is its work charged
	// by the bytes it reads.
	loops bool
	// indexed is set when nodes[<computed id>] became $node(<id>).
	indexed bool
}

func budgetCall(fn string, args ...ast.Node) ast.Node {
	return &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: args}
}

var keepsPerElement = map[string]bool{"map": true, "filter": true, "groupBy": true, "sortBy": true}

// keyedPerElement are the builtins whose predicate gives a key that is
// hashed or compared.
var keyedPerElement = map[string]bool{"groupBy": true, "sortBy": true}

// walkCall wraps n in a $walk charging its length in the given mode.
func walkCall(n ast.Node, mode int) ast.Node {
	call := budgetCall("$walk", n, &ast.IntegerNode{Value: mode})
	call.SetLocation(n.Location())
	return call
}

func (p *budgetPatcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		switch n.Operator {
		case "+":
			// With a number on either side `+` cannot concatenate: it adds
			// or fails, allocating nothing.
			if !isNumberType(n.Left.Type()) && !isNumberType(n.Right.Type()) {
				ast.Patch(node, budgetCall("$add", n.Left, n.Right))
				p.patched = true
			}
		case "in":
			// A literal array of constants or a range is sized in the text
			// (and turned into a set or a comparison by the optimizer); the
			// needle is still hashed or compared once per evaluation.
			if p.loops && !cheapOperand(n.Left) {
				n.Left = weighCall(n.Left)
				p.patched = true
			}
			if !constantArray(n.Right) && !isRange(n.Right) {
				// $in charges the walk, and each deep comparison (a
				// collection needle) by the sizes compared.
				call := budgetCall("$in", n.Left, n.Right)
				call.SetLocation(n.Location())
				ast.Patch(node, call)
				p.patched = true
			}
		case "contains", "startsWith", "endsWith":
			n.Left = walkCall(n.Left, walkLinear)
			p.patched = true
		case "matches":
			call := budgetCall("$matches", n.Left, n.Right)
			call.SetLocation(n.Location())
			ast.Patch(node, call)
			p.patched = true
		case "==", "!=":
			// Two collections are walked by reflect.DeepEqual. Scalars
			// compare in constant time, but for two strings of one length,
			// which memcmp reads: charged where it can repeat.
			if (isScalar(n.Left) || isScalar(n.Right)) && (!p.loops || cheapCompare(n.Left, n.Right)) {
				return
			}
			var eq ast.Node = budgetCall("$eq", n.Left, n.Right)
			if n.Operator == "!=" {
				eq = &ast.UnaryNode{Operator: "not", Node: eq}
			}
			eq.SetLocation(n.Location())
			ast.Patch(node, eq)
			p.patched = true
		case "<", ">", "<=", ">=":
			// Strings are ordered by reading their common prefix.
			if !p.loops || cheapCompare(n.Left, n.Right) {
				return
			}
			call := budgetCall("$cmp", n.Left, n.Right, &ast.StringNode{Value: n.Operator})
			call.SetLocation(n.Location())
			ast.Patch(node, call)
			p.patched = true
		}
	case *ast.MemberNode:
		if _, named := n.Property.(*ast.StringNode); !named && isNodes(n.Node) {
			// nodes[id] looks the one node up: the map of every visible
			// node is not built for it (Evaluator.node charges the key).
			call := budgetCall("$node", n.Property)
			call.SetLocation(n.Location())
			ast.Patch(node, call)
			p.indexed = true
			return
		}
		// A computed key is hashed to look it up.
		if p.loops && !cheapOperand(n.Property) {
			n.Property = weighCall(n.Property)
			p.patched = true
		}
	case *ast.CallNode:
		// A time's Format method is the one method the values in scope
		// have whose work grows with an operand: its layout.
		if m, ok := n.Callee.(*ast.MemberNode); ok && m.Method && len(n.Arguments) == 1 {
			if name, ok := m.Property.(*ast.StringNode); ok && name.Value == "Format" && !cheapOperand(n.Arguments[0]) {
				call := budgetCall("$layout", n.Arguments[0])
				call.SetLocation(n.Arguments[0].Location())
				n.Arguments[0] = call
				p.patched = true
			}
		}
	case *ast.BuiltinNode:
		if mode, ok := walking[n.Name]; ok && !hasPredicate(n) {
			for i, a := range n.Arguments {
				if !isScalar(a) {
					n.Arguments[i] = walkCall(a, mode)
					p.patched = true
				}
			}
		}
		fn := "$step"
		switch {
		case keyedPerElement[n.Name]:
			fn = "$stepKey"
		case keepsPerElement[n.Name]:
			fn = "$stepAlloc"
		}
		for _, a := range n.Arguments {
			if pred, ok := a.(*ast.PredicateNode); ok {
				call := budgetCall(fn, pred.Node)
				call.SetLocation(pred.Node.Location())
				pred.Node = call
				p.patched = true
			}
		}
		if n.Name == "timezone" && len(n.Arguments) == 1 {
			// Loading a zone is charged through its name, which keeps the
			// builtin (and the *time.Location it returns) typed.
			call := budgetCall("$zone", n.Arguments[0])
			call.SetLocation(n.Arguments[0].Location())
			n.Arguments[0] = call
			p.patched = true
		}
		if allocating[n.Name] {
			args := append([]ast.Node{&ast.StringNode{Value: n.Name}}, n.Arguments...)
			ast.Patch(node, budgetCall("$call", args...))
			p.patched = true
		}
	}
}

// weighCall wraps n in a $weigh charging the bytes of the string it
// evaluates to.
func weighCall(n ast.Node) ast.Node {
	call := budgetCall("$weigh", n)
	call.SetLocation(n.Location())
	return call
}

// cheapOperand reports whether reading n for a hash or a comparison takes
// constant time: a literal (a string literal of at most cmpBytesPerStep
// bytes) or a value typed as a number or a bool.
func cheapOperand(n ast.Node) bool {
	switch v := n.(type) {
	case *ast.NilNode, *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode:
		return true
	case *ast.StringNode:
		return len(v.Value) <= cmpBytesPerStep
	}
	t := n.Type()
	return t != nil && (isNumberType(t) || t.Kind() == reflect.Bool)
}

// cheapCompare reports whether comparing l and r takes constant time: a
// comparison reads at most the shorter operand, so one cheap side is
// enough.
func cheapCompare(l, r ast.Node) bool { return cheapOperand(l) || cheapOperand(r) }

// constantArray reports whether n is a literal array of literals.
func constantArray(n ast.Node) bool {
	a, ok := n.(*ast.ArrayNode)
	if !ok {
		return false
	}
	for _, e := range a.Nodes {
		switch e.(type) {
		case *ast.NilNode, *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode, *ast.StringNode:
		default:
			return false
		}
	}
	return true
}

// loopFinder reports whether a tree has a predicate.
type loopFinder struct{ found bool }

func (f *loopFinder) Visit(node *ast.Node) {
	if _, ok := (*node).(*ast.PredicateNode); ok {
		f.found = true
	}
}

func hasLoops(n *ast.Node) bool {
	f := &loopFinder{}
	ast.Walk(n, f)
	return f.found
}

func hasPredicate(n *ast.BuiltinNode) bool {
	for _, a := range n.Arguments {
		if _, ok := a.(*ast.PredicateNode); ok {
			return true
		}
	}
	return false
}

func isRange(n ast.Node) bool {
	b, ok := n.(*ast.BinaryNode)
	return ok && b.Operator == ".."
}

// isScalar reports whether n is a literal scalar or typed as a number,
// string or bool: comparing it takes constant time (or memcmp).
func isScalar(n ast.Node) bool {
	switch n.(type) {
	case *ast.NilNode, *ast.BoolNode, *ast.StringNode, *ast.IntegerNode, *ast.FloatNode:
		return true
	}
	t := n.Type()
	if t == nil {
		return false
	}
	return isNumberType(t) || t.Kind() == reflect.String || t.Kind() == reflect.Bool
}

func isNumberType(t reflect.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// compiled is a program and what its unpatched source refers to.
type compiled struct {
	src  string
	prog *vm.Program // nil until program is called when fast is set
	// fast, when not nil, evaluates the expression without the VM.
	fast    *fastForm
	once    sync.Once
	progErr error
	refs    *refCollector
	typ     reflect.Type // the checker's result type; nil or interface when unknown
	// budgeted is set when the program calls the budget functions.
	budgeted bool
	// indexed is set when the program calls $node.
	indexed bool
	// secretWhy says how the text breaks the secret rule (secret.go), ""
	// when it keeps it.
	secretWhy string
	// expr is the Expression every use of the text gets once its names
	// are checked where it sits: it depends on the text alone, so it is
	// made once with the compilation (fillExpr), beside its fast forms
	// when it has them (see quickCompiled).
	expr *Expression
}

// configs holds the compiler configurations compileBudgeted uses. expr
// builds one per Compile (a map of every builtin and the environment's
// types); one is reused instead, by one compilation at a time, since the
// checker writes to its type cache.
var configs = sync.Pool{New: func() any {
	config := conf.CreateNew()
	for _, op := range budgetEnv {
		op(config)
	}
	config.Check()
	return config
}}

// compileBudgeted is expr.Compile with the budget patch applied between the
// type check (whose errors are reported as without it) and compilation.
// With fast, an expression that has a fast form is not compiled for the VM
// until it needs to be.
func compileBudgeted(src string, fast bool) (*compiled, error) {
	// Before the parser, whose recursion is what it bounds.
	if err := checkNesting(src); err != nil {
		return nil, err
	}
	config := configs.Get().(*conf.Config)
	defer configs.Put(config)
	tree, err := parser.ParseWithConfig(src, config)
	if err != nil {
		return nil, err
	}
	// The checker compiles literal patterns: the pattern bounds come first.
	if err := checkPatterns(tree); err != nil {
		return nil, err
	}
	if _, err := new(checker.Checker).PatchAndCheck(tree, config); err != nil {
		return nil, err
	}
	c := newRefCollector()
	ast.Walk(&tree.Node, c)
	typ := tree.Node.Type()
	secretWhy := ""
	if c.secretUses > 0 {
		secretWhy = secretFlow(tree.Node)
	}
	f := (*fastForm)(nil)
	if fast {
		f = fastFormOf(tree.Node)
		if f != nil && f.kind != formOp {
			return &compiled{src: src, fast: f, refs: c, typ: typ, secretWhy: secretWhy}, nil
		}
	}
	p := &budgetPatcher{loops: hasLoops(&tree.Node)}
	ast.Walk(&tree.Node, p)
	if f != nil && !p.patched && !p.indexed {
		// An operator the patch leaves alone (one side is a number): the
		// program, compiled on first need, is budget-free as the fast
		// form is. One that may concatenate keeps its budget and the VM.
		return &compiled{src: src, fast: f, refs: c, typ: typ, secretWhy: secretWhy}, nil
	}
	if p.patched || p.indexed {
		// The patch added calls the first check has not typed.
		if _, err := checker.Check(tree, config); err != nil {
			return nil, err
		}
	}
	if config.Optimize {
		if err := optimizer.Optimize(&tree.Node, config); err != nil {
			return nil, err
		}
	}
	prog, err := compiler.Compile(tree, config)
	if err != nil {
		return nil, err
	}
	return &compiled{src: src, prog: prog, refs: c, typ: typ, budgeted: p.patched, indexed: p.indexed, secretWhy: secretWhy}, nil
}

// AsInt accepts a whole number as JSON decodes it (float64) or as expr-lang
// computes it (int).
func AsInt(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > math.MaxInt32 {
			return 0, false
		}
		return int(n), true
	case int:
		return n, true
	case int64:
		return int(n), true
	}
	return 0, false
}

// checkPatterns applies the pattern bounds to the literal patterns of a
// parsed tree.
func checkPatterns(tree *parser.Tree) error {
	v := &patternChecker{}
	ast.Walk(&tree.Node, v)
	return v.err
}

type patternChecker struct{ err error }

func (v *patternChecker) Visit(node *ast.Node) {
	if b, ok := (*node).(*ast.BinaryNode); ok && b.Operator == "matches" && v.err == nil {
		if s, ok := b.Right.(*ast.StringNode); ok {
			v.err = checkPattern(s.Value)
		}
	}
}

// first is args[0], or nil.
func first(args []any) any {
	if len(args) == 0 {
		return nil
	}
	return args[0]
}
