package engine

import (
	"context"
	"math"
	"strconv"
	"sync"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/protocol"
)

// mapKind runs a sub-graph once per item.
type mapKind struct{}

var mapWith = document.With{Required: true, Doc: "A sub-graph run once per item.", Fields: []document.Field{
	{Name: "items", Type: document.Type{Kind: document.Array, Template: true}, Required: true, Doc: "An expression (a ${{ }} string) or a literal array."},
	{Name: "concurrency", Type: document.Type{Kind: document.Integer, Minimum: 1, Template: true}, Doc: "Iterations running at once; at most the runner's maxConcurrency, which is also the default."},
	{Name: "nodes", Type: document.Type{Kind: document.Nodes}, Required: true, Literal: true, Doc: "The sub-graph run for each item."},
	{Name: "output", Type: document.AnyValue, Doc: "Per-item output, templated in the iteration's scope. Absent: the outputs of the iteration's sink nodes."},
	{Name: "distribute", Type: document.Type{Kind: document.Object, Fields: []document.Field{
		{Name: "batchSize", Type: document.Type{Kind: document.Integer, Minimum: 1}, Doc: "Items per child invocation (fewer when a batch would pass Lambda's 6 MB event). Absent: the items spread evenly over invocations."},
		{Name: "invocations", Type: document.Type{Kind: document.Integer, Minimum: 1}, Required: true, Doc: "Child invocations running at once; at most the runner's maxFanOutInvocations."},
	}}, Literal: true, Doc: "Run the items in batches, each in another invocation of the runner's function (docs/workflows.md, Distributed maps). Only on a top-level map, and only when the runner's constraints.maxFanOutInvocations is above 0."},
}}

func (*mapKind) With() *document.With { return &mapWith }

type mapStep struct {
	sub       *graph
	output    lang.Template
	hasOutput bool
	dist      *distribution // with.distribute; nil runs in process
}

func (*mapKind) Prepare(c *Compiler) Step {
	c.With("nodes", "output", "distribute")
	dist := prepareDistribute(c)
	// A literal array is known now: refuse it before acceptance rather than
	// fail the execution later.
	if lit, ok := c.Raw("items"); ok {
		if a, isArr := lit.([]any); isArr && len(a) > c.Limits().MaxMapItems {
			c.Errorf("items", "%d items, over maxMapItems (%d)", len(a), c.Limits().MaxMapItems)
		}
	}
	c.Fields().Int("concurrency", 1, math.MaxInt)
	raw, _ := c.Raw("nodes")
	docs, err := document.ParseNodes(raw)
	if err != nil {
		c.Errorf("nodes", "%v", err)
		return nil
	}
	sub := c.subgraph("nodes", docs)
	if sub == nil {
		return nil
	}
	s := &mapStep{sub: sub, dist: dist}
	if v, ok := c.Raw("output"); ok {
		// The output sees the sub-graph's nodes, then what the map node
		// sees.
		sub.whole = sight{g: sub, i: -1, outer: c.n.sight}
		outer := c.sc
		sc := &lang.Scope{
			Upstream: &sub.whole,
			Item:     true,
			Input:    outer.Input,
			Tally:    outer.Tally,
			Hints:    outer.Hints,
		}
		s.output = c.templateIn("output", v, sc)
		s.hasOutput = true
	}
	return s
}

// subgraph is the graph every iteration runs.
func (s *mapStep) subgraph() *graph { return s.sub }

func (s *mapStep) Run(ctx context.Context, call *Call) (any, error) {
	w := call.WithMap()
	items, ok := lang.AsArray(w["items"])
	if !ok {
		return nil, Errorf(protocol.CodeExpressionError, "with.items must evaluate to an array, got %s", JSONType(w["items"]))
	}
	l := call.Limits()
	if len(items) > l.MaxMapItems {
		return nil, Errorf(protocol.CodeLimitExceeded, "with.items has %d items, over maxMapItems (%d)", len(items), l.MaxMapItems)
	}
	conc := l.MaxConcurrency
	f := call.Fields()
	if n, ok := f.Int("concurrency", 1, math.MaxInt); ok {
		conc = min(n, l.MaxConcurrency)
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	if s.dist != nil && len(items) > 0 {
		return s.distribute(ctx, call, items, max(1, conc))
	}
	return s.iterations(ctx, call, 0, items, max(1, conc))
}

// iterations runs the items, the first at index start, at most conc at
// once, and returns their outputs in order. A child of a distributed map
// runs its batch with it as the parent's map would in process.
func (s *mapStep) iterations(ctx context.Context, call *Call, start int, items []any, conc int) ([]any, error) {
	d := newDispatch(ctx)
	defer d.cancel()
	out := make([]any, len(items))
	slots := make(chan struct{}, conc)
loop:
	for i, item := range items {
		select {
		case slots <- struct{}{}:
		case <-d.ctx.Done():
			break loop
		}
		if call.suspending() {
			<-slots
			break
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer func() { <-slots }()
			v, err := s.iteration(d.ctx, call, start+i, item)
			out[i] = v // each goroutine its own index, read after wait
			d.fail(err)
		}()
	}
	if err := d.wait(call); err != nil {
		return nil, err
	}
	return out, nil
}

// dispatch is what a map's bounded-dispatch loop shares in process
// (mapStep.iterations; a distributed map's batches are engine/distribute's):
// the caller starts its items in goroutines of its own, at most N at a
// time, each counted in wg; the first failure is kept and cancels the
// others; wait collects. The caller's goroutines are the only allocation
// per item, as the loop's own would be.
type dispatch struct {
	ctx    context.Context // the items', cancelled on the first failure
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	first  error // under mu
}

func newDispatch(ctx context.Context) *dispatch {
	d := &dispatch{}
	d.ctx, d.cancel = context.WithCancel(ctx)
	return d
}

// fail records err, unless it is nil, as the map's failure if it is the
// first, and cancels the items still running.
func (d *dispatch) fail(err error) {
	if err == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.first == nil {
		d.first = err
	}
	d.cancel()
}

// wait waits for every item started and returns the map's failure: the
// first item's, the execution's suspension, or the end of the items'
// context; nil when all completed.
func (d *dispatch) wait(call *Call) error {
	d.wg.Wait()
	switch {
	case d.first != nil:
		return d.first
	case call.suspending():
		return errSuspended
	case d.ctx.Err() != nil:
		return d.ctx.Err()
	}
	return nil
}

func (s *mapStep) iteration(ctx context.Context, call *Call, i int, item any) (any, error) {
	sc := &scope{parent: call.sc, input: call.sc.input, exec: call.sc.exec, item: item, index: i, hasItem: true}
	gr, err := call.runGraph(ctx, s.sub, sc, call.ID+"["+strconv.Itoa(i)+"].", call.depth())
	if err != nil {
		return nil, err
	}
	if !s.hasOutput {
		return gr.output(ctx)
	}
	return newEvaluator(ctx, sc, s.output, &s.sub.whole).Eval(s.output)
}

// workflowKind runs a child workflow from runtime.workflows.
type workflowKind struct{}

var workflowWith = document.With{Required: true, Doc: "A child workflow, run as one node.", Fields: []document.Field{
	{Name: "workflow", Type: document.Name, Required: true, Doc: "The child workflow's id, in runtime.workflows."},
	{Name: "input", Type: document.AnyValue, Doc: "The child's input."},
}}

func (*workflowKind) With() *document.With { return &workflowWith }

func (*workflowKind) Prepare(c *Compiler) Step {
	c.With()
	if id, ok := c.Literal("workflow"); ok {
		if c.childDocs()[id] == nil {
			c.RuntimeErrorf("workflow", "unknown child workflow %q: not in runtime.workflows%s", id, c.missingHint("workflows", id, func() []string { return sortedKeys(c.childDocs()) }))
			return nil
		}
		c.StaticAction(protocol.ActionWorkflowRun, id)
	}
	return childStep{}
}

// childStep runs the child workflow with.workflow names.
type childStep struct{}

// subgraph is nil: which child runs is known from the node's workflow.run
// action, through which preflight finds it.
func (childStep) subgraph() *graph { return nil }

func (childStep) Run(ctx context.Context, call *Call) (any, error) {
	w := call.WithMap()
	f := call.Fields()
	id, _ := f.String("workflow")
	if err := f.Err(); err != nil {
		return nil, err
	}
	child := call.childWorkflow(id)
	if child == nil {
		return nil, Errorf(protocol.CodeFailed, "unknown child workflow %q: not in runtime.workflows", id)
	}
	if depth := call.depth() + 1; depth > call.Limits().MaxChildDepth {
		return nil, Errorf(protocol.CodeLimitExceeded, "child workflow %q would nest %d deep, over maxChildDepth (%d)", id, depth, call.Limits().MaxChildDepth)
	}
	if err := call.Authorize(ctx, protocol.ActionWorkflowRun, id); err != nil {
		return nil, err
	}
	input := w["input"]
	if child.inputSchema != nil {
		// What expressions built, in the form JSON decodes to (float64
		// numbers), as the schema is applied to a request's input.
		v, err := asJSON(input)
		if err != nil {
			return nil, Errorf(protocol.CodeFailed, "input of child workflow %q: %v", id, err)
		}
		d := &document.Problems{}
		if !document.SchemaDetails("input", child.inputSchema, v, d, &lang.Hints{}) {
			return nil, Errorf(protocol.CodeFailed, "input of child workflow %q: %s", id, d.Err().Error())
		}
	}
	sc := &scope{input: input, exec: call.sc.exec}
	gr, err := call.runGraph(ctx, child, sc, call.ID+".", call.depth()+1)
	if err != nil {
		return nil, err
	}
	return gr.output(ctx)
}
