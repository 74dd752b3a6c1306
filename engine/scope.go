package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/protocol"
)

// scope is what expressions see at run time: the input, the states of
// upstream nodes (inner graphs shadow outer ones), the execution, and inside
// a map the item and index.
type scope struct {
	parent  *scope
	gr      *graphRun
	input   any
	exec    map[string]any
	item    any
	index   int
	hasItem bool
}

// state returns the expression view of a node's state: {status, output,
// error}. Only nodes that have ended have one.
func (s *scope) state(id string) (map[string]any, bool) {
	gr, i := s.lookup(id)
	if gr == nil || gr.states[i].status == "" {
		return nil, false
	}
	return gr.views.get(gr, i), true
}

// node returns the state of an ended node in scope.
func (s *scope) node(id string) (nodeState, bool) {
	gr, i := s.lookup(id)
	if gr == nil {
		return nodeState{}, false
	}
	st := gr.states[i]
	return st, st.status != ""
}

// lookup finds the graph run that holds node id, inner graphs shadowing
// outer ones, and the node's index in it; nil when no graph in scope has
// the node.
func (s *scope) lookup(id string) (*graphRun, int) {
	for c := s; c != nil; c = c.parent {
		if c.gr == nil {
			continue
		}
		if i, ok := c.gr.g.index[id]; ok {
			return c.gr, i
		}
	}
	return nil, 0
}

// The scope is the expression language's run-time environment.
var _ lang.RefEnv = (*scope)(nil)

// NodeRef is Node through a compiled reference's memory of where its node
// was: the serial of the graph that held it and its index there. The
// memory is used only when that graph is the innermost in scope, whose
// nodes nothing shadows; it names a graph by serial, not by pointer, so a
// reference kept in the compile caches holds no workflow's graph alive.
func (s *scope) NodeRef(id string, ref *atomic.Uint64) (string, any, bool) {
	c := s
	for c != nil && c.gr == nil {
		c = c.parent
	}
	if c == nil {
		return "", nil, false
	}
	gr := c.gr
	if v := ref.Load(); v != 0 && v>>refIndexBits == gr.g.serial {
		return gr.states[v&refIndexMask].ended()
	}
	i, ok := gr.g.index[id]
	if !ok {
		// An outer graph's: the search goes on past the graph just
		// looked in, rather than from s again.
		if ogr, j := c.parent.lookup(id); ogr != nil {
			return ogr.states[j].ended()
		}
		return "", nil, false
	}
	if uint64(i) <= refIndexMask && gr.g.serial < 1<<(64-refIndexBits) {
		ref.Store(gr.g.serial<<refIndexBits | uint64(i))
	}
	return gr.states[i].ended()
}

// A reference's memory (scope.NodeRef): the graph's serial above
// refIndexBits, the node's index below.
const (
	refIndexBits = 24
	refIndexMask = 1<<refIndexBits - 1
)

// graphSerials numbers graphs as they are built, from 1.
var graphSerials atomic.Uint64

// Input returns the input in scope.
func (s *scope) Input() any { return s.input }

// Execution returns the execution object.
func (s *scope) Execution() map[string]any { return s.exec }

// Node returns an ended node's status and output.
func (s *scope) Node(id string) (status string, output any, ok bool) {
	st, _ := s.node(id)
	return st.ended()
}

// ended is what Node answers of st: its status and output, and whether it
// has ended.
func (st nodeState) ended() (status string, output any, ok bool) {
	return string(st.status), st.output, st.status != ""
}

// State returns the expression view of an ended node's state.
func (s *scope) State(id string) (map[string]any, bool) { return s.state(id) }

// Item returns the item and index of the innermost map iteration in scope.
func (s *scope) Item() (any, int, bool) {
	for c := s; c != nil; c = c.parent {
		if c.hasItem {
			return c.item, c.index, true
		}
	}
	return nil, 0, false
}

// MaxValueBytes is the bound of a template's value written out
// (lang.ValueBound): the execution's.
func (s *scope) MaxValueBytes() int64 {
	for c := s; c != nil; c = c.parent {
		if c.gr != nil {
			return c.gr.r.maxValueBytes()
		}
	}
	return lang.DefaultMaxValueBytes
}

// exprBudget is the expression budget of the execution the scope belongs
// to.
func (s *scope) exprBudget() lang.Budget {
	l := s.limits()
	return lang.Budget{MaxSteps: l.MaxExprSteps, MaxMemory: l.MaxExprMemory}
}

// newEvaluator returns an evaluator of t in sc, bounded by ctx and the
// execution's expression budget.
func newEvaluator(ctx context.Context, sc *scope, t lang.Template, up *sight) *lang.Evaluator {
	return lang.NewEvaluator(ctx, sc, t, sc.exprBudget(), up)
}

// limits returns the limits of the execution the scope belongs to.
func (s *scope) limits() Limits {
	for c := s; c != nil; c = c.parent {
		if c.gr != nil {
			return c.gr.r.x.limits
		}
	}
	return DefaultLimits()
}

// stateView builds the immutable expression view of an ended node.
// Expressions compare plain strings, so the typed status and code are
// converted: expr does not equate a named string type with a string.
func stateView(status protocol.NodeStatus, output any, ne *NodeError) map[string]any {
	v := map[string]any{"status": string(status), "output": output, "error": nil}
	if ne != nil {
		v["error"] = map[string]any{"code": string(ne.Code), "message": ne.Message}
	}
	return v
}

// viewCache builds the expression views of a graph's node states on first
// use: most nodes are read only through fast forms, which need none.
type viewCache struct {
	mu    sync.Mutex
	views []map[string]any
}

func (c *viewCache) get(gr *graphRun, i int) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.views == nil {
		c.views = make([]map[string]any, len(gr.states))
	}
	if c.views[i] == nil {
		st := gr.states[i]
		c.views[i] = stateView(st.status, st.output, st.err)
	}
	return c.views[i]
}
