package engine

// Prepare, stage 3: the graph. A document's nodes (or a map's sub-graph)
// become a graph: ids indexed, needs resolved, cycles refused, dependents
// and sinks listed, and the reachability the expression scopes ask of it.

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/runnerd/lambda-runner/engine/dag"
	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/schema"
)

// graph is a compiled DAG of nodes: a workflow, a map's sub-graph, or a
// child workflow.
type graph struct {
	id          string
	serial      uint64 // unique to this graph, for references' memory (scope.NodeRef)
	nodes       []*node
	index       map[string]int
	output      lang.Template
	hasOutput   bool
	whole       sight // every node of the graph: its output's sight
	sinks       []int
	inputSchema *schema.Schema
	reach       []dag.Set // see reachable
	reachOnce   sync.Once
}

// node is a compiled node.
type node struct {
	id        string
	typ       string
	path      string
	needs     []int
	dependent []int
	when      *lang.Expression
	with      lang.Template
	step      Step
	inner     composite // the step, when it runs nodes of its own
	retry     document.Retry
	timeout   time.Duration
	continue_ bool
	static    []staticAction
	// sight is what the node's expressions may read of nodes beyond the
	// ids they name; the ids are listed per evaluation that reads nodes
	// whole rather than kept per node, which would cost a chain's length
	// squared.
	sight *sight
	// quick is set by kinds whose step does no more than read its with;
	// inline when such a node runs on the scheduler (see inline.go).
	quick  bool
	inline bool
	// valueOnly: with is value alone and with holds the member's
	// template, so attempts evaluate the value (Call.With holds it) and
	// build the object only for a traced node.started.
	valueOnly bool
}

// buildGraph makes the graph of nodes found at path: ids indexed, needs
// resolved to indexes, cycles refused (nil), dependents and sinks listed.
// Its nodes are compiled after (prepare_compile.go), in the scopes the
// graph gives them.
func (p *prep) buildGraph(path string, docs []document.Node) *graph {
	g := &graph{index: make(map[string]int, len(docs)), serial: graphSerials.Add(1)}
	for i, nd := range docs {
		if j, dup := g.index[nd.ID]; dup {
			// Reported, and the rest still checked: references to the id
			// resolve to its first node.
			p.d.Addf(fmt.Sprintf("%s[%d].id", path, i), "duplicate node id %q (also nodes[%d])", nd.ID, j)
			continue
		}
		g.index[nd.ID] = i
	}
	g.nodes = make([]*node, len(docs))
	// One allocation each for the graph's nodes, their paths, their needs
	// and their dependents, not one per node.
	nodes := make([]node, len(docs))
	paths := nodePaths(path, len(docs))
	total := 0
	for _, nd := range docs {
		total += len(nd.Needs)
	}
	needs := make([]int, 0, total)
	for i, nd := range docs {
		n := &nodes[i]
		*n = node{id: nd.ID, typ: nd.Type, path: paths[i], continue_: nd.OnError == "continue"}
		first := len(needs)
		for j, need := range nd.Needs {
			k, ok := g.index[need]
			switch {
			case !ok:
				p.d.Addf(fmt.Sprintf("%s.needs[%d]", n.path, j), "unknown node id %q%s", need, p.hints.DidYouMean(need, func() []string { return docIDs(docs) }))
			case k == i:
				p.d.Addf(fmt.Sprintf("%s.needs[%d]", n.path, j), "node %q needs itself", need)
			default:
				needs = append(needs, k)
			}
		}
		if len(needs) > first {
			n.needs = needs[first:len(needs):len(needs)]
		}
		n.retry = normalizeRetry(nd.Retry)
		n.timeout = time.Duration(nd.TimeoutMs) * time.Millisecond
		g.nodes[i] = n
	}
	// A need that names no node is reported and left out: the rest of the
	// graph is still checked.
	if cycle := dag.Cycle(g); cycle != nil {
		p.d.Addf(g.nodes[cycle[0]].path+".needs", "cycle: %s", dag.CyclePath(cycle, func(i int) string { return g.nodes[i].id }))
		return nil
	}
	// Each node's dependents are a segment of one array, in node order.
	ends := make([]int, len(g.nodes))
	for _, n := range g.nodes {
		for _, k := range n.needs {
			ends[k]++
		}
	}
	for k := 1; k < len(ends); k++ {
		ends[k] += ends[k-1]
	}
	dependents := make([]int, len(needs))
	for i := len(g.nodes) - 1; i >= 0; i-- {
		for _, k := range g.nodes[i].needs {
			ends[k]--
			dependents[ends[k]] = i
		}
	}
	for k, n := range g.nodes {
		// ends[k] is now where k's segment starts.
		end := len(dependents)
		if k+1 < len(ends) {
			end = ends[k+1]
		}
		if end > ends[k] {
			n.dependent = dependents[ends[k]:end:end]
		}
	}
	for i, n := range g.nodes {
		if len(n.dependent) == 0 {
			g.sinks = append(g.sinks, i)
		}
	}
	return g
}

// nodePaths returns path[0] … path[n-1], substrings of one string.
func nodePaths(path string, n int) []string {
	buf := make([]byte, 0, n*(len(path)+8))
	ends := make([]int, n)
	for i := range n {
		buf = append(buf, path...)
		buf = append(buf, '[')
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, ']')
		ends[i] = len(buf)
	}
	all := string(buf)
	paths := make([]string, n)
	start := 0
	for i, end := range ends {
		paths[i] = all[start:end]
		start = end
	}
	return paths
}

func (g *graph) has(id string) bool {
	_, ok := g.index[id]
	return ok
}

// upstream reports whether id is a direct or transitive need of node i.
func (g *graph) upstream(i int, id string) bool {
	target, ok := g.index[id]
	if !ok {
		return false
	}
	return slices.Contains(g.nodes[i].needs, target) || g.reachable()[i].Has(target)
}

// reachable returns, for every node, the set of its transitive needs. It is
// computed once per graph, on first need, in one pass in need order
// (O(n²/64) words), so that every reference check and every dynamic `nodes`
// is a lookup: a search per question made a chain that reads nodes
// dynamically O(n³). Most graphs never need it: a reference to a direct
// need is answered from the needs (upstream).
func (g *graph) reachable() []dag.Set {
	g.reachOnce.Do(func() { g.reach = dag.Reach(g) })
	return g.reach
}

// Len is the number of g's nodes: with Needs, g is a dag.Graph.
func (g *graph) Len() int { return len(g.nodes) }

// Needs returns the indexes of the nodes node i needs.
func (g *graph) Needs(i int) []int { return g.nodes[i].needs }

// sight is what the expressions of a node may read of nodes, by a computed
// id or whole: the upstream nodes of its graph (every node of it, for the
// graph's output), then what the enclosing node sees, the graph's own ids
// shadowing it. It is a lang.Upstream, made at preparation and read at run
// time; it holds graphs only, so a cached plan keeps nothing of the
// request that prepared it.
type sight struct {
	g     *graph
	i     int    // the node; every node of g when negative
	outer *sight // the enclosing node's, nil at top level
}

// Visible reports whether nodes.<id> may be read from s (nothing from
// a nil s).
func (s *sight) Visible(id string) bool {
	if s == nil {
		return false
	}
	if s.i < 0 {
		if s.g.has(id) {
			return true
		}
	} else if s.g.upstream(s.i, id) {
		return true
	}
	return s.outer != nil && !s.g.has(id) && s.outer.Visible(id)
}

// Ancestors lists every id s may read, outer ones included.
func (s *sight) Ancestors() []string {
	if s == nil {
		return nil
	}
	var ids []string
	var r dag.Set // nil: all of them
	if s.i >= 0 {
		r = s.g.reachable()[s.i]
	} else {
		ids = make([]string, 0, len(s.g.nodes))
	}
	for k, n := range s.g.nodes {
		if r == nil || r.Has(k) {
			ids = append(ids, n.id)
		}
	}
	if s.outer != nil {
		for _, id := range s.outer.Ancestors() {
			if !s.g.has(id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// normalizeRetry returns the policy in force. Absent fields were already
// filled from document.DefaultRetry when the document was decoded, so zero backoffs
// here are explicit and kept.
func normalizeRetry(r *document.Retry) document.Retry {
	out := document.DefaultRetry
	if r == nil {
		return out
	}
	if r.MaxAttempts > 0 {
		out.MaxAttempts = r.MaxAttempts
	}
	if r.BackoffMs >= 0 {
		out.BackoffMs = r.BackoffMs
	}
	if r.Factor >= 1 {
		out.Factor = r.Factor
	}
	if r.MaxBackoffMs >= 0 {
		out.MaxBackoffMs = r.MaxBackoffMs
	}
	return out
}

// docIDs lists the ids of docs, for a suggestion.
func docIDs(docs []document.Node) []string {
	ids := make([]string, len(docs))
	for i := range docs {
		ids[i] = docs[i].ID
	}
	return ids
}
