package engine

import "github.com/expr-lang/expr/vm"

// A set or fail node does nothing but evaluate its with: a goroutine of its
// own (its stack grown to the depth of an attempt, two switches) costs more
// than the node. Such a node runs on the scheduler instead, when nothing in
// it can take long: no retry (a backoff would park the scheduler), and no
// expression that loops or scans (an `in` over a big array, a predicate).
// What remains costs time in proportion to its text, and the node's
// timeout and the expression budgets still apply, as for `when`, which
// already runs on the scheduler.

// runsInline marks the node as one that may run on the scheduler, should
// its retry policy and with allow it (see inlineable).
func (c *Compiler) runsInline() { c.n.quick = true }

// inlineable reports whether n runs on the scheduler.
func (n *node) inlineable() bool {
	return n.quick && n.inner == nil && n.retry.MaxAttempts <= 1 && n.with.constantTime()
}

// constantTime reports whether evaluating t takes time in proportion to
// its text, whatever the values it reads.
func (t Template) constantTime() bool {
	return t.root == nil || constantTimeNode(t.root)
}

func constantTimeNode(n tnode) bool {
	switch n := n.(type) {
	case literal:
		return true
	case typed:
		return n.e.constantTime()
	case mixed:
		for _, e := range n.exprs {
			if !e.constantTime() {
				return false
			}
		}
		return true
	case object:
		for _, v := range n.vals {
			if !constantTimeNode(v) {
				return false
			}
		}
		return true
	case array:
		for _, v := range n.elems {
			if !constantTimeNode(v) {
				return false
			}
		}
		return true
	}
	return false
}

func (e *expression) constantTime() bool {
	if e.cp.fast != nil {
		return true
	}
	if e.budgeted || e.cp.prog == nil {
		return false
	}
	for _, op := range e.cp.prog.Bytecode {
		if !constantOps[op] {
			return false
		}
	}
	return true
}

// constantOps are the VM instructions that take constant time (strings
// compared by <, > take their length). Calls, loops (backward jumps), `in`,
// generic equality (deep on collections), matches and collection building
// are left out.
var constantOps = func() (ops [256]bool) {
	for _, op := range []vm.Opcode{
		vm.OpPush, vm.OpInt, vm.OpPop, vm.OpLoadConst, vm.OpLoadFast, vm.OpFetch, vm.OpFetchField,
		vm.OpTrue, vm.OpFalse, vm.OpNil, vm.OpNegate, vm.OpNot, vm.OpEqualInt, vm.OpEqualString,
		vm.OpJump, vm.OpJumpIfTrue, vm.OpJumpIfFalse, vm.OpJumpIfNil, vm.OpJumpIfNotNil,
		vm.OpLess, vm.OpMore, vm.OpLessOrEqual, vm.OpMoreOrEqual,
		vm.OpAdd, vm.OpSubtract, vm.OpMultiply, vm.OpDivide, vm.OpModulo, vm.OpExponent,
		vm.OpLen, vm.OpCast, vm.OpDeref,
	} {
		ops[op] = true
	}
	return ops
}()
