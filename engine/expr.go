package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// exprScope says what the expressions at one place of a document may refer
// to. It is how references are checked before acceptance.
type exprScope struct {
	// visible reports whether nodes.<id> may be referenced: an upstream node
	// whose state is final before the referring node runs.
	visible func(id string) bool
	// ancestors lists the visible ids, for expressions that index nodes
	// dynamically.
	ancestors func() []string
	// item is true inside a map sub-graph (item and index are in scope).
	item bool
	// secrets, when not nil, are the secret names usable here (HTTP node
	// request fields only).
	secrets map[string]bool
}

// expression is one compiled `${{ }}` or `when`.
type expression struct {
	src  string
	prog *vm.Program
	refs []string // nodes.<id> referenced by name
	all  bool     // nodes indexed dynamically: every visible node is needed
	// secretRefs are the secrets.<name> referenced by name and allSecrets
	// is set when secrets is used otherwise (indexed dynamically, passed
	// whole): an http node binds the host-bound ones to its request.
	secretRefs []string
	allSecrets bool
}

// compileExpr compiles src once and checks its names against sc. The error
// is for people and names what is wrong; the caller adds the path.
func compileExpr(src string, sc *exprScope, opts ...expr.Option) (*expression, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	prog, err := compileProgram(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %s", src, firstLine(err.Error()))
	}
	c := &refCollector{}
	root := prog.Node()
	ast.Walk(&root, c)
	e := &expression{src: src, prog: prog}
	for _, name := range c.roots {
		switch {
		case name == "input", name == "execution", slices.Contains(c.lets, name):
		case name == "nodes":
		case name == "item", name == "index":
			if !sc.item {
				return nil, fmt.Errorf("expression %q: %s is only in scope inside a map node's nodes", src, name)
			}
		case name == "secrets":
			if sc.secrets == nil {
				return nil, fmt.Errorf("expression %q: secrets are only available in an http node's url, query, headers and body", src)
			}
		default:
			return nil, fmt.Errorf("expression %q: unknown name %q (in scope: input, nodes, execution%s)", src, name, scopeHint(sc))
		}
	}
	for _, id := range c.nodeRefs {
		if !sc.visible(id) {
			return nil, fmt.Errorf("expression %q: nodes.%s is not upstream of this node (add it to needs, directly or through another need)", src, id)
		}
		if !slices.Contains(e.refs, id) {
			e.refs = append(e.refs, id)
		}
	}
	e.all = c.nodesUses > len(c.nodeRefs)
	for _, name := range c.secretRefs {
		if !slices.Contains(e.secretRefs, name) {
			e.secretRefs = append(e.secretRefs, name)
		}
	}
	e.allSecrets = c.secretUses > len(c.secretRefs)
	if sc.secrets != nil {
		for _, name := range c.secretRefs {
			if !sc.secrets[name] {
				return nil, fmt.Errorf("expression %q: secret %q is not in runtime.http.secrets", src, name)
			}
		}
	}
	return e, nil
}

func scopeHint(sc *exprScope) string {
	s := ""
	if sc.item {
		s += ", item, index"
	}
	if sc.secrets != nil {
		s += ", secrets"
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// refCollector walks an expression's syntax tree for the names it uses.
type refCollector struct {
	roots      []string
	lets       []string
	nodeRefs   []string
	nodesUses  int
	secretRefs []string
	secretUses int
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
		id, ok := v.Node.(*ast.IdentifierNode)
		prop, isStr := v.Property.(*ast.StringNode)
		if !ok || !isStr {
			return
		}
		switch id.Value {
		case "nodes":
			c.nodeRefs = append(c.nodeRefs, prop.Value)
		case "secrets":
			c.secretRefs = append(c.secretRefs, prop.Value)
		}
	}
}
