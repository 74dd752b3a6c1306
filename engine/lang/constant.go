package lang

import "github.com/expr-lang/expr/vm"

// ConstantTime reports whether evaluating t takes time in proportion to
// its text, whatever the values it reads.
func (t Template) ConstantTime() bool {
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
	case *object:
		for _, m := range n.members {
			if !constantTimeNode(m.val) {
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

func (e *Expression) constantTime() bool {
	if e.cp.fast != nil {
		return true
	}
	if e.budgeted || e.all || e.cp.prog == nil {
		// A whole read of nodes builds a map of every visible node.
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
