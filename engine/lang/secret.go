package lang

import (
	"fmt"

	"github.com/expr-lang/expr/ast"
)

// The secret rule. A secret's value may flow only into the request fields
// of an http node (headers, query and body; never its URL, see the engine)
// and only by being passed on: concatenated with `+`, encoded with
// toBase64, placed in an array or an object, chosen by a condition that
// does not read it, or bound to a `let` name that is itself only passed on.
// Anything else an expression could do with a secret — compare it, branch
// on it, take its length, slice or index it, give it to any other function
// — is refused before acceptance. Each of those is an oracle: a result (an
// output, an error, which request was sent) that differs with the secret's
// characters, so that a workflow could read the secret back one character
// at a time without sending it anywhere (issue 18, class 1).
//
// The check runs on the parsed tree of the text, so a secret is followed
// through every name an expression gives it; outside an expression, a
// secret can reach nothing: secrets are in scope only in those request
// fields, and what the node returns is the response, scrubbed of every
// form of every secret before any node sees it.

// A let name that holds a secret may be read once: a secret is placed,
// not repeated. `let s1 = s0 + s0; let s2 = s1 + s1; …` doubles it at each
// step, so that 17 names make a value of 2^17 copies whose size, against
// the expression memory budget, tells the secret's length (issue 18,
// class 7); each secret written out in the text is placed once, so the
// size of what an expression builds from secrets stays linear in its text.

// secretFlow returns why src's use of secrets breaks the rule, or "".
func secretFlow(tree ast.Node) string {
	c := &secretChecker{}
	c.taint(tree, nil)
	return c.why
}

// binding is a let name in scope: whether it holds a secret, and how many
// times the expression reads it.
type binding struct {
	secret bool
	reads  int
}

type secretChecker struct{ why string }

// refuse records the first breach, as "what is done with a secret".
func (c *secretChecker) refuse(format string, args ...any) {
	if c.why == "" {
		c.why = fmt.Sprintf(format, args...)
	}
}

// taint reports whether n's value may be (or contain) a secret, recording
// a breach when n does something with one other than pass it on. vars are
// the let names in scope and whether each holds a secret.
func (c *secretChecker) taint(n ast.Node, vars map[string]*binding) bool {
	switch n := n.(type) {
	case nil:
		return false
	case *ast.IdentifierNode:
		if b, ok := vars[n.Value]; ok {
			if b.secret {
				if b.reads++; b.reads == 2 {
					c.refuse("reads %s, which holds a secret, more than once (a secret may be placed once, not repeated)", n.Value)
				}
			}
			return b.secret
		}
		return n.Value == "secrets"
	case *ast.MemberNode:
		if id, ok := n.Node.(*ast.IdentifierNode); ok && id.Value == "secrets" && !isVar(vars, "secrets") {
			// secrets.NAME or secrets[key]: the source. The key must not
			// be computed from a secret.
			if c.taint(n.Property, vars) {
				c.refuse("indexes secrets by a secret")
			}
			return true
		}
		if c.taint(n.Node, vars) {
			c.refuse("reads a field or element of a secret")
		}
		if c.taint(n.Property, vars) {
			c.refuse("indexes a value by a secret")
		}
		return false
	case *ast.ChainNode:
		return c.taint(n.Node, vars)
	case *ast.SliceNode:
		if c.taint(n.Node, vars) {
			c.refuse("slices a secret")
		}
		if c.taint(n.From, vars) || c.taint(n.To, vars) {
			c.refuse("slices by a secret")
		}
		return false
	case *ast.UnaryNode:
		if c.taint(n.Node, vars) {
			c.refuse("applies %s to a secret", n.Operator)
		}
		return false
	case *ast.BinaryNode:
		l, r := c.taint(n.Left, vars), c.taint(n.Right, vars)
		switch {
		case !l && !r:
			return false
		case n.Operator == "+" && !isNumberType(n.Left.Type()) && !isNumberType(n.Right.Type()):
			return true // concatenation
		case n.Operator == "??" && !l:
			return true // chosen by what is not a secret
		case n.Operator == "+":
			c.refuse("adds a number to a secret")
		default:
			c.refuse("applies the operator %s to a secret", n.Operator)
		}
		return false
	case *ast.ConditionalNode:
		if c.taint(n.Cond, vars) {
			c.refuse("branches on a secret")
		}
		a, b := c.taint(n.Exp1, vars), c.taint(n.Exp2, vars)
		return a || b
	case *ast.BuiltinNode:
		tainted := false
		for _, a := range n.Arguments {
			if c.taint(a, vars) {
				tainted = true
			}
		}
		if !tainted {
			return false
		}
		if n.Name == "toBase64" {
			return true // the encoding of Basic authentication
		}
		c.refuse("passes a secret to %s()", n.Name)
		return false
	case *ast.CallNode:
		tainted := c.taint(n.Callee, vars)
		for _, a := range n.Arguments {
			tainted = c.taint(a, vars) || tainted
		}
		if tainted {
			c.refuse("passes a secret to a function")
		}
		return false
	case *ast.PredicateNode:
		if c.taint(n.Node, vars) {
			c.refuse("uses a secret in a predicate")
		}
		return false
	case *ast.VariableDeclaratorNode:
		t := c.taint(n.Value, vars)
		inner := make(map[string]*binding, len(vars)+1)
		for k, v := range vars {
			inner[k] = v
		}
		inner[n.Name] = &binding{secret: t}
		return c.taint(n.Expr, inner)
	case *ast.SequenceNode:
		t := false
		for _, e := range n.Nodes {
			t = c.taint(e, vars)
		}
		return t
	case *ast.ArrayNode:
		t := false
		for _, e := range n.Nodes {
			t = c.taint(e, vars) || t
		}
		return t
	case *ast.MapNode:
		t := false
		for _, p := range n.Pairs {
			t = c.taint(p, vars) || t
		}
		return t
	case *ast.PairNode:
		if c.taint(n.Key, vars) {
			c.refuse("uses a secret as an object key")
		}
		return c.taint(n.Value, vars)
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.StringNode,
		*ast.BytesNode, *ast.ConstantNode, *ast.PointerNode:
		return false
	}
	// A node this rule does not know: it may pass on nothing of a secret.
	v := &mentions{}
	ast.Walk(&n, v)
	if v.found {
		c.refuse("uses a secret in an expression the secret rule does not allow")
	}
	return false
}

func isVar(vars map[string]*binding, name string) bool {
	_, ok := vars[name]
	return ok
}

// mentions finds the identifier secrets in a tree.
type mentions struct{ found bool }

func (m *mentions) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok && id.Value == "secrets" {
		m.found = true
	}
}
