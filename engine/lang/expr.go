// Package lang is the expression language of workflows: `${{ }}` templates
// and `when` conditions, compiled once before acceptance (names checked
// against where each expression sits) and evaluated under a per-evaluation
// budget of work and memory that also watches the evaluation's context.
// The engine calls it through a small surface: Scope and the Compile
// functions at preparation, Env and Evaluator at run time.
package lang

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
)

// Scope says what the expressions at one place of a document may refer
// to. It is how references are checked before acceptance.
type Scope struct {
	// Visible reports whether nodes.<id> may be referenced: an upstream node
	// whose state is final before the referring node runs.
	Visible func(id string) bool
	// Ancestors lists the visible ids, for expressions that index nodes
	// dynamically.
	Ancestors func() []string
	// Upstream, when not nil, answers for Visible and Ancestors, which are
	// then not read: a caller preparing a scope per node gives the methods
	// of a value it holds anyway rather than two closures per node.
	Upstream Upstream
	// Input, when not nil, is what the workflow's input schema declares:
	// input.<name> references are checked against it.
	Input *InputShape
	// Item is true inside a map sub-graph (item and index are in scope).
	Item bool
	// Secrets, when not nil, are the secret names usable here (HTTP node
	// request fields only), under the secret rule (secret.go).
	Secrets map[string]bool
	// Node is the id of the node the expressions belong to, for messages.
	Node string
	// Tally, when not nil, counts the request's expressions against
	// maxExpressions.
	Tally *Tally
	// Hints, when not nil, counts the request's searches for suggestions
	// against maxHints.
	Hints *Hints
}

// Upstream is what a Scope's Visible and Ancestors say, as methods.
type Upstream interface {
	Visible(id string) bool
	Ancestors() []string
}

// IsVisible reports whether nodes.<id> may be referenced from sc.
func (sc *Scope) IsVisible(id string) bool {
	if sc.Upstream != nil {
		return sc.Upstream.Visible(id)
	}
	return sc.Visible(id)
}

// AncestorIDs lists the ids visible from sc.
func (sc *Scope) AncestorIDs() []string {
	if sc.Upstream != nil {
		return sc.Upstream.Ancestors()
	}
	return sc.Ancestors()
}

// Expression is one compiled `${{ }}` or `when`.
type Expression struct {
	src  string
	cp   *compiled
	refs []string // nodes.<id> referenced by name
	// all is set when nodes is read whole (len(nodes), keys(nodes), a
	// variable holding it): every visible node's state is then built
	// into one map. nodes[id] with a computed id is not such a read: the
	// program looks the one node up ($node, see Evaluator.node).
	all bool
	// secretRefs are the secrets.<name> referenced by name and allSecrets
	// is set when secrets is used otherwise (indexed dynamically, passed
	// whole): an http node binds the host-bound ones to its request.
	secretRefs []string
	allSecrets bool
	// inputRefs are the input.<name> properties read by name, for the
	// check against the workflow's input schema.
	inputRefs []string
	// typ is the result type when the compiler can tell, else nil.
	typ reflect.Type
	// budgeted is set when the program calls the budget functions.
	budgeted bool
	// fast is cp.fast, read here without going through cp: one cache
	// line fewer for each evaluation. It comes last, next to the form
	// that follows the Expression in its allocation (quickHot).
	fast *fastForm
}

// Src returns the expression's text.
func (e *Expression) Src() string { return e.src }

// InputRefs returns the input.<name> properties the expression reads by
// name, in order of first use.
func (e *Expression) InputRefs() []string { return e.inputRefs }

// Template returns the template that is e alone, for evaluating a `when`.
func (e *Expression) Template() Template {
	return Template{root: typed{e}, refs: e.refs, all: e.all}
}

// readsSecrets reports whether the expression sees any secret value.
func (e *Expression) readsSecrets() bool { return e.allSecrets || len(e.secretRefs) > 0 }

// Fields of a node's state in expressions (see stateView).
var (
	stateFields = []string{"status", "output", "error"}
	errorFields = []string{"code", "message"}
)

// compileExpr compiles src once and checks its names against sc. The error
// is for people and names what is wrong; the caller adds the path.
func compileExpr(src string, sc *Scope) (*Expression, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	cp, err := compileProgram(src)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %s", src, rephraseCompile(firstLine(err.Error())))
	}
	c := cp.refs
	for _, name := range c.roots {
		switch {
		case name == "input", name == "execution", slices.Contains(c.lets, name):
		case name == "nodes":
		case name == "item", name == "index":
			if !sc.Item {
				return nil, fmt.Errorf("expression %q: %s is only in scope inside a map node's nodes", src, name)
			}
		case name == "secrets":
			if sc.Secrets == nil {
				return nil, fmt.Errorf("expression %q: secrets are only available in an http node's headers, query and body", src)
			}
		default:
			names := scopeNames(sc)
			return nil, fmt.Errorf("expression %q: unknown name %q (in scope: %s)%s", src, name, strings.Join(names, ", "), sc.Hints.DidYouMean(name, func() []string { return names }))
		}
	}
	for _, id := range c.nodeRefs {
		if !sc.IsVisible(id) {
			hint := sc.Hints.DidYouMean(id, sc.AncestorIDs)
			if hint == "" {
				hint = " (add it to needs, directly or through another need)"
			}
			return nil, fmt.Errorf("expression %q: nodes.%s is not upstream of this node%s", src, id, hint)
		}
	}
	for _, f := range c.nodeFields {
		fields := stateFields
		if f.sub {
			fields = errorFields
		}
		if !slices.Contains(fields, f.field) {
			what := "a node's state has status, output and error"
			if f.sub {
				what = "a node's error has code and message"
			}
			return nil, fmt.Errorf("expression %q: %s is not a field (%s)%s", src, f.path(), what, sc.Hints.DidYouMean(f.field, func() []string { return fields }))
		}
	}
	if sc.Secrets != nil && cp.secretWhy != "" {
		return nil, fmt.Errorf("%sexpression %q %s: %s", nodePrefix(sc), src, cp.secretWhy, secretRule)
	}
	if sc.Secrets != nil {
		for _, name := range c.secretRefs {
			if !sc.Secrets[name] {
				return nil, &runtimeRefError{fmt.Sprintf("expression %q: secret %q is not in runtime.http.secrets", src, name)}
			}
		}
	}
	return cp.expr, nil
}

// fillExpr makes c's Expression, before c is shared.
func (c *compiled) fillExpr() {
	r := c.refs
	if c.expr == nil {
		c.expr = new(Expression)
	}
	e := c.expr
	*e = Expression{fast: c.fast, src: c.src, cp: c, typ: c.typ, budgeted: c.budgeted}
	e.refs = distinct(r.nodeRefs)
	e.all = r.nodesUses > len(r.nodeRefs)+r.nodesIndexed
	for _, name := range r.secretRefs {
		if !slices.Contains(e.secretRefs, name) {
			e.secretRefs = append(e.secretRefs, name)
		}
	}
	e.allSecrets = r.secretUses > len(r.secretRefs)
	e.inputRefs = distinct(r.inputRefs)
}

// secretRule is the rule a refused use of a secret breaks, as messages
// state it.
const secretRule = "a secret may only be passed on into an http node's headers, query or body — concatenated with +, encoded with toBase64, in an array or object — never compared, branched on, measured, sliced, indexed or given to another function, whose result would tell its characters (docs/security.md, \"Secrets are opaque\")"

// nodePrefix is `node "id": ` for a scope that names its node.
func nodePrefix(sc *Scope) string {
	if sc.Node == "" {
		return ""
	}
	return fmt.Sprintf("node %q: ", sc.Node)
}

func scopeNames(sc *Scope) []string {
	names := []string{"input", "nodes", "execution"}
	if sc.Item {
		names = append(names, "item", "index")
	}
	if sc.Secrets != nil {
		names = append(names, "secrets")
	}
	return names
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// refCollector walks an expression's syntax tree for the names it uses.
type refCollector struct {
	roots     []string
	lets      []string
	nodeRefs  []string
	nodesUses int
	// nodesIndexed counts nodes[<computed id>]: uses of nodes that need
	// one node, not all of them.
	nodesIndexed int
	secretRefs   []string
	secretUses   int
	inputRefs    []string
	nodeFields   []nodeField
	// Most expressions name a root or two and read a node or two: these
	// hold them without allocations of their own.
	rootsBuf, refsBuf [2]string
	fieldsBuf         [2]nodeField
}

func newRefCollector() *refCollector {
	c := &refCollector{}
	c.init()
	return c
}

// init points c's lists at its own buffers.
func (c *refCollector) init() {
	c.roots, c.nodeRefs, c.nodeFields = c.rootsBuf[:0], c.refsBuf[:0], c.fieldsBuf[:0]
}

// nodeField is a nodes.<id>.<field> (or nodes.<id>.error.<field>, sub)
// read by name.
type nodeField struct {
	id    string
	field string
	sub   bool
}

// path is the reference as written, for messages.
func (f nodeField) path() string {
	if f.sub {
		return "nodes." + f.id + ".error." + f.field
	}
	return "nodes." + f.id + "." + f.field
}

// distinct returns ids without repetitions, ids itself (its capacity
// clipped, so that appending to it copies) when it has none.
func distinct(ids []string) []string {
	for i, id := range ids {
		if slices.Contains(ids[:i], id) {
			var out []string
			for _, id := range ids {
				if !slices.Contains(out, id) {
					out = append(out, id)
				}
			}
			return out
		}
	}
	return slices.Clip(ids)
}

func (c *refCollector) Visit(n *ast.Node) {
	switch v := (*n).(type) {
	case *ast.IdentifierNode:
		if !slices.Contains(c.roots, v.Value) {
			c.roots = append(c.roots, v.Value)
		}
		switch v.Value {
		case "nodes":
			c.nodesUses++
		case "secrets":
			c.secretUses++
		}
	case *ast.VariableDeclaratorNode:
		c.lets = append(c.lets, v.Name)
	case *ast.MemberNode:
		prop, isStr := v.Property.(*ast.StringNode)
		if !isStr {
			if isNodes(v.Node) {
				c.nodesIndexed++
			}
			return
		}
		if id, ok := nodeMember(v.Node); ok {
			c.nodeFields = append(c.nodeFields, nodeField{id: id, field: prop.Value})
			return
		}
		if inner, ok := v.Node.(*ast.MemberNode); ok {
			if p, ok := inner.Property.(*ast.StringNode); ok && p.Value == "error" {
				if id, ok := nodeMember(inner.Node); ok {
					c.nodeFields = append(c.nodeFields, nodeField{id: id, field: prop.Value, sub: true})
				}
			}
			return
		}
		id, ok := v.Node.(*ast.IdentifierNode)
		if !ok {
			return
		}
		switch id.Value {
		case "nodes":
			c.nodeRefs = append(c.nodeRefs, prop.Value)
		case "secrets":
			c.secretRefs = append(c.secretRefs, prop.Value)
		case "input":
			c.inputRefs = append(c.inputRefs, prop.Value)
		}
	}
}

// isNodes reports whether n is the name nodes.
func isNodes(n ast.Node) bool {
	id, ok := n.(*ast.IdentifierNode)
	return ok && id.Value == "nodes"
}

// nodeMember reports whether n is nodes.<id>, and the id.
func nodeMember(n ast.Node) (string, bool) {
	m, ok := n.(*ast.MemberNode)
	if !ok {
		return "", false
	}
	root, ok := m.Node.(*ast.IdentifierNode)
	prop, isStr := m.Property.(*ast.StringNode)
	if !ok || !isStr || root.Value != "nodes" {
		return "", false
	}
	return prop.Value, true
}
