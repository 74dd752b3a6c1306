package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Sink receives an execution's events; protocol.Writer is one.
type Sink interface {
	ExecutionID() string
	Emit(protocol.Event) error
	Finish(protocol.Terminal) error
}

// run is the state of one running execution, shared by all its graphs.
type run struct {
	x     *Execution
	id    string
	sink  Sink
	start time.Time
	sem   chan struct{}
	pre   decisions

	nodes  atomic.Int64 // node instances started, for maxNodes
	budget atomic.Int64 // bytes held in node outputs
	usage  usageCounters

	mu          sync.Mutex
	suspensions []protocol.Suspension
	suspended   atomic.Bool
}

type usageCounters struct {
	inputTokens, outputTokens, modelCalls, toolCalls, httpRequests atomic.Int64
}

// graphRun is one instance of a graph: the top-level workflow, one map
// iteration or one child workflow call.
type graphRun struct {
	r      *run
	g      *graph
	sc     *scope
	prefix string // "" at top level, "each[3]." in a map iteration
	depth  int    // child workflow nesting
	states []nodeState
}

type nodeState struct {
	status string // "", completed, failed, skipped
	output any
	err    *NodeError
	view   map[string]any
}

// graphFailure is a node failure that ends its graph.
type graphFailure struct {
	nodeID string // full id of the innermost node at fault
	err    *NodeError
}

func (f *graphFailure) Error() string { return f.nodeID + ": " + f.err.Message }
func (f *graphFailure) Unwrap() error { return f.err }

// Summary is how an execution ended, for logs and metrics.
type Summary struct {
	ExecutionID string
	Status      string // completed, suspended or failed
	Nodes       int64
	Duration    time.Duration
	Usage       protocol.Usage
}

// Run executes the workflow, writing node events and exactly one terminal
// event to sink. The caller has written accepted. Run returns when the
// terminal event is written; it never panics on a node's behalf.
func (x *Execution) Run(ctx context.Context, sink Sink) Summary {
	r := &run{x: x, id: sink.ExecutionID(), sink: sink, start: time.Now()}
	r.sem = make(chan struct{}, max(1, x.e.Limits.MaxConcurrency))
	ctx, cancel := x.deadline(ctx)
	defer cancel()

	gr := r.newGraphRun(x.g, &scope{input: x.input, exec: map[string]any{"id": r.id}}, "", 0)
	r.preflight(gr)
	var err error
	if !r.suspended.Load() {
		err = gr.execute(ctx)
	}
	status := r.finish(ctx, gr, err)
	return Summary{ExecutionID: r.id, Status: status, Nodes: r.nodes.Load(), Duration: time.Since(r.start), Usage: r.usageSnapshot()}
}

// deadline derives the execution context: the caller's deadline (the
// invocation's) less the reserve, or MaxDuration when there is none.
func (x *Execution) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	l := x.e.Limits
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Now().Add(l.MaxDuration)
	}
	return context.WithDeadlineCause(ctx, d.Add(-l.Reserve), errDeadline)
}

func (r *run) newGraphRun(g *graph, sc *scope, prefix string, depth int) *graphRun {
	gr := &graphRun{r: r, g: g, prefix: prefix, depth: depth, states: make([]nodeState, len(g.nodes))}
	sc.gr = gr
	gr.sc = sc
	return gr
}

// finish writes the terminal event and returns the execution's status.
func (r *run) finish(ctx context.Context, gr *graphRun, err error) string {
	dur := time.Since(r.start).Milliseconds()
	var f *graphFailure
	switch {
	case err == nil && r.suspended.Load():
		r.mu.Lock()
		s := r.suspensions
		r.mu.Unlock()
		_ = r.sink.Finish(&protocol.Result{Status: protocol.StatusSuspended, Output: json.RawMessage("null"), Usage: r.usageSnapshot(), DurationMs: dur, Suspended: s})
		return protocol.StatusSuspended
	case err == nil:
		out, oerr := gr.output()
		if oerr == nil {
			var b []byte
			if b, oerr = r.marshal(out); oerr == nil {
				_ = r.sink.Finish(&protocol.Result{Status: protocol.StatusCompleted, Output: b, Usage: r.usageSnapshot(), DurationMs: dur})
				return protocol.StatusCompleted
			}
		}
		r.fail("", "workflow output: "+r.x.redact.String(oerr.Error()))
	case errors.As(err, &f):
		r.fail(f.nodeID, fmt.Sprintf("node %s failed: %s: %s", f.nodeID, f.err.Code, r.x.redact.String(f.err.Message)))
	case errors.Is(context.Cause(ctx), errDeadline):
		r.fail("", "deadline exceeded")
	default:
		r.fail("", "cancelled: "+r.x.redact.String(err.Error()))
	}
	return "failed"
}

func (r *run) fail(nodeID, msg string) {
	_ = r.sink.Finish(&protocol.Error{Error: protocol.ExecutionError{Code: protocol.CodeExecutionFailed, Message: msg, NodeID: nodeID}})
}

func (r *run) usageSnapshot() protocol.Usage {
	return protocol.Usage{
		InputTokens:  r.usage.inputTokens.Load(),
		OutputTokens: r.usage.outputTokens.Load(),
		ModelCalls:   r.usage.modelCalls.Load(),
		ToolCalls:    r.usage.toolCalls.Load(),
		HTTPRequests: r.usage.httpRequests.Load(),
	}
}

// marshal encodes a value for the wire with every secret redacted.
func (r *run) marshal(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	red := r.x.redact.JSON(b)
	if !json.Valid(red) {
		// A secret matched across JSON syntax (a number, say): redact the
		// value's strings instead and mask what is left.
		return json.Marshal(Redacted)
	}
	return red, nil
}

// traced returns v for a traced event: redacted and, beyond MaxEventBytes,
// replaced by a marker with a preview.
func (r *run) traced(v any) json.RawMessage {
	if !r.x.trace {
		return nil
	}
	b, err := r.marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"$unencodable": err.Error()})
	}
	if limit := r.x.e.Limits.MaxEventBytes; limit > 0 && len(b) > limit {
		preview := string(b[:min(len(b), limit/2)])
		b, _ = json.Marshal(map[string]any{"$truncated": true, "bytes": len(b), "preview": preview})
	}
	return b
}

type result struct {
	i     int
	state nodeState
	fail  *graphFailure
}

// execute runs the graph to its end: every node completed, failed, skipped
// or never started (after a failure or a suspension). It returns a
// *graphFailure for a node failure that ends the graph, or the context's
// error.
func (gr *graphRun) execute(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := gr.g
	remaining := make([]int, len(g.nodes))
	var ready []int
	for i, n := range g.nodes {
		remaining[i] = len(n.needs)
		if remaining[i] == 0 {
			ready = append(ready, i)
		}
	}
	done := make(chan result)
	running := 0
	var failure *graphFailure
	ended := func(i int) {
		for _, k := range g.nodes[i].dependent {
			if remaining[k]--; remaining[k] == 0 {
				ready = append(ready, k)
			}
		}
	}
	for {
		for len(ready) > 0 && failure == nil && ctx.Err() == nil && !gr.r.suspended.Load() {
			i := ready[0]
			ready = ready[1:]
			if st, skip := gr.gate(i); skip {
				gr.record(i, st)
				if st.status == statusFailed && !g.nodes[i].continue_ {
					failure = &graphFailure{nodeID: gr.prefix + g.nodes[i].id, err: st.err}
					cancel()
					break
				}
				ended(i)
				continue
			}
			running++
			go func() {
				st, f := gr.runNode(ctx, i)
				done <- result{i: i, state: st, fail: f}
			}()
		}
		if running == 0 {
			break
		}
		res := <-done
		running--
		gr.record(res.i, res.state)
		if res.state.status == statusFailed && !g.nodes[res.i].continue_ && failure == nil {
			failure = res.fail
			cancel()
		}
		ended(res.i)
	}
	if failure != nil {
		return failure
	}
	return context.Cause(ctx)
}

const (
	statusCompleted = "completed"
	statusFailed    = "failed"
	statusSkipped   = "skipped"
	statusSuspended = "suspended"
)

func (gr *graphRun) record(i int, st nodeState) {
	if st.status == statusSuspended {
		return
	}
	st.view = stateView(st.status, st.output, st.err)
	gr.states[i] = st
}

// gate decides whether a ready node runs: skip=true means it does not, with
// the state to record (skipped, or failed when `when` cannot be evaluated).
func (gr *graphRun) gate(i int) (nodeState, bool) {
	n := gr.g.nodes[i]
	if n.when != nil {
		ev := newEvaluator(gr.sc, Template{refs: n.when.refs, all: n.when.all}, n.ancestors)
		v, err := ev.run(n.when)
		if err != nil {
			ne := classify(err, context.Background(), context.Background())
			gr.emitFailed(n, 1, 0, ne, false)
			return nodeState{status: statusFailed, err: ne}, true
		}
		if b, _ := v.(bool); !b {
			return nodeState{status: statusSkipped}, true
		}
		return nodeState{}, false
	}
	if len(n.needs) == 0 {
		return nodeState{}, false
	}
	for _, k := range n.needs {
		if gr.states[k].status == statusCompleted {
			return nodeState{}, false
		}
	}
	return nodeState{status: statusSkipped}, true
}

// runNode runs a node's attempts. It is called on its own goroutine.
func (gr *graphRun) runNode(ctx context.Context, i int) (st nodeState, f *graphFailure) {
	n := gr.g.nodes[i]
	r := gr.r
	id := gr.prefix + n.id
	defer func() {
		if p := recover(); p != nil {
			ne := &NodeError{Code: protocol.CodeFailed, Message: fmt.Sprintf("internal error in %s node: %v", n.typ, p)}
			st, f = nodeState{status: statusFailed, err: ne}, &graphFailure{nodeID: id, err: ne}
		}
	}()
	if c := r.nodes.Add(1); c > int64(r.x.e.Limits.MaxNodes) {
		ne := Errorf(protocol.CodeLimitExceeded, "execution ran more than maxNodes (%d) nodes", r.x.e.Limits.MaxNodes)
		gr.emitFailed(n, 1, 0, ne, false)
		return nodeState{status: statusFailed, err: ne}, &graphFailure{nodeID: id, err: ne}
	}
	if !n.composite {
		select {
		case r.sem <- struct{}{}:
			defer func() { <-r.sem }()
		case <-ctx.Done():
			ne := classify(ctx.Err(), ctx, ctx)
			return nodeState{status: statusFailed, err: ne}, &graphFailure{nodeID: id, err: ne}
		}
	}
	backoff := time.Duration(n.retry.BackoffMs) * time.Millisecond
	for attempt := 1; ; attempt++ {
		began := time.Now()
		out, ne, inner := gr.attempt(ctx, n, id, attempt)
		if ne == nil {
			return nodeState{status: statusCompleted, output: out}, nil
		}
		if ne.Code == statusSuspended {
			return nodeState{status: statusSuspended}, nil
		}
		retry := attempt < n.retry.MaxAttempts && !noRetry[ne.Code] && ctx.Err() == nil
		wait := jitter(backoff)
		if dl, ok := ctx.Deadline(); retry && ok && time.Until(dl) < wait {
			retry = false // the backoff would outlive the execution
		}
		gr.emitFailed(n, attempt, time.Since(began).Milliseconds(), ne, retry)
		if !retry {
			if inner == "" {
				inner = id
			}
			return nodeState{status: statusFailed, err: ne}, &graphFailure{nodeID: inner, err: ne}
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			ne := classify(ctx.Err(), ctx, ctx)
			return nodeState{status: statusFailed, err: ne}, &graphFailure{nodeID: id, err: ne}
		}
		backoff = min(time.Duration(float64(backoff)*n.retry.Factor), time.Duration(n.retry.MaxBackoffMs)*time.Millisecond)
	}
}

// jitter spreads a backoff over [d/2, d] so that retries of parallel nodes
// do not hit a service in step.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// attempt runs one attempt. A non-nil error carries the code; inner names
// the innermost node at fault when the failure came from a sub-graph.
func (gr *graphRun) attempt(ctx context.Context, n *node, id string, attempt int) (out any, ne *NodeError, inner string) {
	r := gr.r
	started := time.Now()
	with, err := n.with.eval(newEvaluator(gr.sc, n.with, n.ancestors))
	if err != nil {
		ne := classify(err, ctx, ctx)
		_ = r.sink.Emit(&protocol.NodeStarted{NodeID: id, NodeType: n.typ, Attempt: attempt})
		return nil, ne, ""
	}
	_ = r.sink.Emit(&protocol.NodeStarted{NodeID: id, NodeType: n.typ, Attempt: attempt, Input: r.traced(with)})
	actx, cancel := ctx, context.CancelFunc(func() {})
	if n.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, n.timeout)
	}
	defer cancel()
	call := &Call{ID: id, Type: n.typ, Attempt: attempt, With: with, r: r, gr: gr, n: n, sc: gr.sc}
	out, err = n.step.Run(actx, call)
	dur := time.Since(started).Milliseconds()
	if err != nil {
		if errors.Is(err, errRunSuspended) {
			return nil, &NodeError{Code: statusSuspended}, ""
		}
		var s *suspended
		if errors.As(err, &s) {
			r.suspend(id, n.typ, s)
			return nil, &NodeError{Code: statusSuspended}, ""
		}
		var f *graphFailure
		if errors.As(err, &f) {
			inner = f.nodeID
		}
		ne := classify(err, actx, ctx)
		ne.Message = r.x.redact.String(ne.Message)
		return nil, ne, inner
	}
	if ne := r.account(out); ne != nil {
		return nil, ne, ""
	}
	_ = r.sink.Emit(&protocol.NodeCompleted{NodeID: id, NodeType: n.typ, Attempt: attempt, DurationMs: dur, Output: r.traced(out)})
	return out, nil, ""
}

func (gr *graphRun) emitFailed(n *node, attempt int, dur int64, ne *NodeError, retrying bool) {
	_ = gr.r.sink.Emit(&protocol.NodeFailed{
		NodeID: gr.prefix + n.id, NodeType: n.typ, Attempt: attempt, DurationMs: dur,
		Error:    protocol.NodeError{Code: ne.Code, Message: gr.r.x.redact.String(ne.Message)},
		Retrying: retrying,
	})
}

// suspend records a node waiting for consent.
func (r *run) suspend(id, typ string, s *suspended) {
	r.mu.Lock()
	r.suspensions = append(r.suspensions, protocol.Suspension{NodeID: id, Action: s.action, Resource: s.resource})
	r.mu.Unlock()
	r.suspended.Store(true)
	_ = r.sink.Emit(&protocol.NodeSuspended{NodeID: id, NodeType: typ, Reason: "consent", Request: protocol.ConsentRequest{Action: s.action, Resource: s.resource}})
}

// account checks an output against the per-node cap and the execution's
// memory budget, and charges it to the budget.
func (r *run) account(out any) *NodeError {
	l := r.x.e.Limits
	size := sizeOf(out)
	if l.MaxOutputBytes > 0 && size > l.MaxOutputBytes {
		return Errorf(protocol.CodeOutputTooLarge, "output of about %d bytes exceeds the per-node cap of %d bytes", size, l.MaxOutputBytes)
	}
	if total := r.budget.Add(size); l.MemoryBudget > 0 && total > l.MemoryBudget {
		r.budget.Add(-size)
		return Errorf(protocol.CodeMemoryBudgetExceeded, "node outputs would hold about %d bytes, over the execution's memory budget of %d bytes", total, l.MemoryBudget)
	}
	return nil
}

// output computes the graph's output: its output template, or an object of
// the outputs of completed sink nodes.
func (gr *graphRun) output() (any, error) {
	g := gr.g
	if g.hasOutput {
		all := make([]string, len(g.nodes))
		for i, n := range g.nodes {
			all[i] = n.id
		}
		return g.output.eval(newEvaluator(gr.sc, g.output, all))
	}
	out := make(map[string]any, len(g.sinks))
	for _, i := range g.sinks {
		if gr.states[i].status == statusCompleted {
			out[g.nodes[i].id] = gr.states[i].output
		}
	}
	return out, nil
}
