package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/protocol"
)

// Prepare, stage 4: compile. Each document's graph (prepare_graph.go) has
// its nodes compiled in the scopes the graph gives them: when through
// engine/lang, then the node's Kind.Prepare with a Compiler (kind.go),
// which compiles its with; then the document's input schema and output.

// compileDocument compiles a top-level or child workflow document.
func (p *prep) compileDocument(path string, doc *document.Document) *graph {
	// Expressions are checked against this document's input schema; a
	// child workflow compiled meanwhile has its own.
	defer func(saved *lang.InputShape) { p.input = saved }(p.input)
	p.input = nil
	if len(doc.Input) <= p.limits.MaxSchemaBytes {
		p.input = lang.NewInputShape(doc.Input)
	}
	g := p.compileGraph(path+".nodes", doc.Nodes, nil, false)
	if g == nil {
		return nil
	}
	g.id = doc.ID
	if len(doc.Input) > 0 && string(doc.Input) != "null" && p.schemaWithinLimits(path+".input", doc.Input) {
		var err error
		if g.inputSchema, err = compileSchemaText(doc.Input); err != nil {
			document.SchemaErrors(path+".input", err, p.d)
		}
	}
	if doc.HasOutput() {
		var v any
		_ = json.Unmarshal(doc.Output, &v)
		g.whole = sight{g: g, i: -1}
		sc := &lang.Scope{Upstream: &g.whole, Input: p.input, Tally: &p.tally, Hints: &p.hints}
		g.output = lang.CompileTemplate(path+".output", v, sc, p.d)
		g.hasOutput = true
	}
	return g
}

// schemaWithinLimits refuses a schema (an input schema, a model node's
// json) over maxSchemaBytes or nested deeper than maxSchemaDepth before it
// is compiled, and one that would take the request's distinct schemas
// together over maxSchemaBytes: a compiled schema holds 80–180 times its
// text (100 of 60 KB in one request would hold gigabytes).
func (p *prep) schemaWithinLimits(path string, raw []byte) bool {
	l := p.limits
	if l.MaxSchemaBytes > 0 && len(raw) > l.MaxSchemaBytes {
		p.d.Addf(path, "the schema is %d bytes, over maxSchemaBytes (%d)", len(raw), l.MaxSchemaBytes)
		return false
	}
	if _, seen := p.schemaTexts[string(raw)]; !seen && l.MaxSchemaBytes > 0 {
		if p.schemaBytes+len(raw) > l.MaxSchemaBytes {
			p.d.Addf(path, "the request's schemas would be %d bytes together, over maxSchemaBytes (%d), which bounds them all as it does each", p.schemaBytes+len(raw), l.MaxSchemaBytes)
			return false
		}
		if p.schemaTexts == nil {
			p.schemaTexts = map[string]struct{}{}
		}
		p.schemaTexts[string(raw)] = struct{}{}
		p.schemaBytes += len(raw)
	}
	err := protocol.CheckStructure(raw, l.MaxSchemaDepth)
	var inv *protocol.Invalid
	if errors.As(err, &inv) {
		for _, det := range inv.Details {
			sub := path
			if det.Path != "" {
				sub += "." + det.Path
			}
			p.d.Addf(sub, "%s", strings.Replace(det.Message, "maxDepth", "maxSchemaDepth", 1))
		}
		return false
	}
	return err == nil
}

// compileGraph makes the graph of nodes found at path and compiles them.
// outer is the sight of the enclosing node for a map's sub-graph (nil at
// top level); item says its expressions may read item.
func (p *prep) compileGraph(path string, docs []document.Node, outer *sight, item bool) *graph {
	g := p.buildGraph(path, docs)
	if g == nil {
		return nil
	}
	// Every node's scope and compiler, in one allocation for the graph,
	// and their sights, kept by the nodes, in another.
	preps := make([]nodePrep, len(g.nodes))
	sights := make([]sight, len(g.nodes))
	for i := range g.nodes {
		sights[i] = sight{g: g, i: i, outer: outer}
		g.nodes[i].sight = &sights[i]
		p.compileNode(g, i, &docs[i], &preps[i], item)
	}
	if p.nodes += len(g.nodes); p.nodes > p.limits.MaxNodes && !p.overNodes {
		// Once: every graph past this one is over too, and saying so of
		// each named a child of four nodes as the one too large.
		p.overNodes = true
		if len(g.nodes) > p.limits.MaxNodes {
			p.d.Addf(path, "the workflow has more than maxNodes (%d) nodes", p.limits.MaxNodes)
		} else {
			p.d.Addf(path, "the request's workflows hold more than maxNodes (%d) nodes together; with this one's %d, %d so far", p.limits.MaxNodes, len(g.nodes), p.nodes)
		}
	}
	return g
}

// statelessOnly names node types of the full language that need server
// services a stateless runner does not have.
var statelessOnly = map[string]string{
	"wait":         "the server's checkpoint service",
	"sleep":        "the server's checkpoint service",
	"approval":     "the server's checkpoint service (human approval)",
	"checkpoint":   "the server's checkpoint service",
	"value.get":    "the server's persistent-value service",
	"value.set":    "the server's persistent-value service",
	"value.delete": "the server's persistent-value service",
	"value.list":   "the server's persistent-value service",
}

// nodePrep is what compiling a node keeps: its scope, and the compiler
// that holds it for as long as either lives. The scope's Upstream is the
// node's sight, so a node's scope allocates nothing.
type nodePrep struct {
	sc lang.Scope
	c  Compiler
}

func (p *prep) compileNode(g *graph, i int, nd *document.Node, np *nodePrep, item bool) {
	n := g.nodes[i]
	np.sc = lang.Scope{
		Tally:    &p.tally,
		Hints:    &p.hints,
		Input:    p.input,
		Upstream: n.sight,
		Item:     item,
	}
	sc := &np.sc
	if nd.When != "" {
		n.when = lang.CompileWhen(n.path+".when", nd.When, sc, p.d)
	}
	if reason, ok := statelessOnly[nd.Type]; ok {
		p.d.Addf(n.path+".type", "node %q: type %q needs %s, which this stateless runner does not have", nd.ID, nd.Type, reason)
		return
	}
	kind, ok := p.e.kinds[nd.Type]
	if !ok {
		types := p.e.NodeTypes()
		hint := ""
		if near := p.hints.Closest(nd.Type, func() []string { return types }); near != "" {
			hint = fmt.Sprintf("did you mean %q? ", near)
		}
		p.d.Addf(n.path+".type", "node %q: unknown node type %q (%sthis runner runs %s)", nd.ID, nd.Type, hint, strings.Join(types, ", "))
		return
	}
	if !pureKind(kind) {
		p.impure = true
	}
	np.c = Compiler{p: p, g: g, n: n, doc: nd, sc: sc}
	c := &np.c
	n.step = kind.Prepare(c)
	if cs, ok := n.step.(composite); ok {
		n.inner = cs
	}
	n.inline = n.inlineable()
}

// pureKind reports whether a kind's Prepare reads nothing of the request
// but the node's document and the engine's configuration, so that what it
// compiles may be cached (plancache.go). The kinds that read the runtime
// payload mark the preparation impure as they read it too; a kind that
// does not say it is pure (PureKind) may read anything.
func pureKind(k Kind) bool {
	switch k := k.(type) {
	case *mapKind:
		return true
	case PureKind:
		return k.Pure()
	}
	return false
}
