package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerd/lambda-runner/engine/authorjson"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/services"
	"github.com/runnerd/lambda-runner/protocol/redact"

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
	x    *Execution
	id   string
	sink Sink
	// copies: the sink encodes each event within Emit and keeps nothing
	// of it (a *protocol.Writer), so attempts lend it pooled events.
	copies bool
	start  time.Time
	sem    chan struct{}
	pre    decisions

	nodes  atomic.Int64 // node instances started, for maxNodes
	budget atomic.Int64 // bytes held in node outputs
	usage  usageCounters
	failed failureCounts // final node failures, for metrics
	svc    *services.Run // models, toolsets and http of this execution
	// nodeCap, in a distributed map's child, is the most nodes its batch
	// may start (batchDoc.MaxNodes); 0 elsewhere: maxNodes (nodeCeiling).
	nodeCap int64

	mu          sync.Mutex
	suspensions []protocol.Suspension
	suspended   atomic.Bool

	// fanSlots bounds the child invocations of all the execution's
	// distributed maps together (distribute.go, fanOutSlots; distribute.Parent.Slots).
	fanSlotsOnce sync.Once
	fanSlots     chan struct{}
	// deadline is the execution's (its context's, less the reserve): a
	// distributed map tells its children it apart from its own timeoutMs.
	deadline time.Time

	// valueBound is what a template's value may hold written out
	// (lang.ValueBound), computed on first need.
	valueBoundOnce sync.Once
	valueBound     int64
}

// maxValueBytes is the bound of a template's value written out as a tree:
// what the values in scope can hold without holding one twice, the node
// outputs (the memory budget), one evaluation's allocations and the input.
// A value over it holds shared references (let a1 = [a0, a0]; …).
func (r *run) maxValueBytes() int64 {
	r.valueBoundOnce.Do(func() {
		l := r.x.limits
		r.valueBound = l.MemoryBudget + max(l.MaxExprMemory, 0) + lang.SizeWithin(r.x.input, l.MemoryBudget)
	})
	return r.valueBound
}

// now is the time on the run's clock: its start plus the monotonic time
// since. One clock read rather than time.Now's two (wall and monotonic),
// twice a node; and an execution's times then never step with the wall
// clock, so a node's at and durationMs always agree.
func (r *run) now() time.Time {
	if r.start.IsZero() {
		return time.Now() // a run made without its start (tests)
	}
	return r.start.Add(time.Since(r.start))
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
	views  viewCache // expression views of states, built when read
}

type nodeState struct {
	status protocol.NodeStatus // zero until the node ends
	output any
	err    *NodeError
}

// graphFailure is a node failure that ends its graph.
type graphFailure struct {
	nodeID string // full id of the innermost node at fault
	err    *NodeError
}

func (f *graphFailure) Error() string { return f.nodeID + ": " + f.err.Message }
func (f *graphFailure) Unwrap() error { return f.err }

// Run executes the workflow, writing node events and exactly one terminal
// event to sink. The caller has written accepted. Run returns when the
// terminal event is written; it never panics on a node's behalf.
func (x *Execution) Run(ctx context.Context, sink Sink) (sum protocol.Summary) {
	r := &run{x: x, id: sink.ExecutionID(), sink: sink, start: time.Now()}
	_, r.copies = sink.(*protocol.Writer)
	if o := x.e.Observer; o != nil {
		var end func(protocol.Summary)
		ctx, end = o.StartExecution(ctx, r.id)
		defer func() { end(sum) }()
	}
	// Services live as long as the run: opened now, closed after the
	// terminal event (defers run after the Summary below is built).
	ctx, gr, stop := r.open(ctx)
	defer stop()
	r.deadline, _ = ctx.Deadline()
	r.preflight(gr)
	var err error
	if !r.suspended.Load() {
		err = gr.execute(ctx)
	}
	status, code := r.finish(ctx, gr, err)
	return protocol.Summary{ExecutionID: r.id, Status: status, Code: code, Nodes: r.nodes.Load(),
		Duration: time.Since(r.start), Usage: r.usageSnapshot(), Failures: r.failed.list()}
}

// open readies r to run its execution's graph, for Execution.Run and a
// distributed map's batch (Execution.runBatch) alike: its concurrency
// slots, its services, the execution's deadline. It returns the deadline's
// context, the run of the graph in the execution's scope, and stop, which
// the caller defers: it ends the context and closes the services (by
// ctx's deadline, not the one it just ended).
func (r *run) open(ctx context.Context) (context.Context, *graphRun, func()) {
	x := r.x
	r.sem = make(chan struct{}, max(1, x.limits.MaxConcurrency))
	r.svc = x.e.Services.Open(x.models, x.http, x.e.modelClients(), x.req.Runtime.Toolsets, x.limits.Reads())
	dctx, cancel := x.deadline(ctx)
	stop := func() {
		cancel()
		r.closeServices(ctx)
	}
	return dctx, r.newGraphRun(x.g, &scope{input: x.input, exec: map[string]any{"id": r.id}}, "", 0), stop
}

// closeServices releases the services once the terminal event is written
// (services.Run.Close), within the reserve and ctx's deadline: a toolset
// that fails to close only matters to operators, and is logged, redacted.
func (r *run) closeServices(ctx context.Context) {
	r.svc.Close(ctx, r.x.limits.Reserve, r.x.e.closing, r.x.e.Logger, r.id, r.x.redact)
}

// deadline derives the execution context: the caller's deadline (the
// invocation's) less the reserve, or MaxDuration when there is none.
func (x *Execution) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	end, reserve := x.Deadline(ctx)
	return context.WithDeadlineCause(ctx, end.Add(-reserve), errDeadline)
}

// Deadline returns when an execution run now under ctx must have ended —
// ctx's deadline (the invocation's), or MaxDuration from now — and the
// reserve kept back from it: Run stops the execution's work at end −
// reserve and writes the terminal event in the reserve. A transport gives
// up a client that has not read the stream by end.
func (x *Execution) Deadline(ctx context.Context) (end time.Time, reserve time.Duration) {
	end, ok := ctx.Deadline()
	if !ok {
		end = time.Now().Add(x.limits.MaxDuration)
	}
	return end, x.limits.Reserve
}

func (r *run) newGraphRun(g *graph, sc *scope, prefix string, depth int) *graphRun {
	gr := &graphRun{r: r, g: g, prefix: prefix, depth: depth, states: make([]nodeState, len(g.nodes))}
	sc.gr = gr
	gr.sc = sc
	return gr
}

// finish writes the terminal event and returns the execution's status and,
// when it failed, the code of what ended it.
func (r *run) finish(ctx context.Context, gr *graphRun, err error) (status protocol.ExecutionStatus, code protocol.Code) {
	dur := time.Since(r.start).Milliseconds()
	var f *graphFailure
	switch {
	case err == nil && r.suspended.Load():
		r.mu.Lock()
		s := r.suspensions
		r.mu.Unlock()
		_ = r.sink.Finish(&protocol.Result{Status: protocol.StatusSuspended, Output: json.RawMessage("null"), Usage: r.usageSnapshot(), DurationMs: dur, Suspended: s})
		return protocol.StatusSuspended, ""
	case err == nil:
		out, oerr := gr.output(ctx)
		if oerr == nil {
			oerr = r.resultFits(out)
		}
		if oerr == nil {
			var b []byte
			if b, oerr = r.marshal(out); oerr == nil {
				_ = r.sink.Finish(&protocol.Result{Status: protocol.StatusCompleted, Output: b, Usage: r.usageSnapshot(), DurationMs: dur})
				return protocol.StatusCompleted, ""
			}
		}
		// Named with its code, as a node's failure is.
		ocode, msg := protocol.CodeExpressionError, oerr.Error()
		var ne *NodeError
		if errors.As(oerr, &ne) {
			ocode, msg = ne.Code, ne.Message
		}
		var le *lang.Error
		if errors.As(oerr, &le) {
			ocode = le.Code // LIMIT_EXCEEDED for a budget
		}
		r.fail("", fmt.Sprintf("%s: workflow output: %s", ocode, r.x.redact.String(msg)))
		code = protocol.CodeExecutionFailed
	case errors.As(err, &f) && f.err.Code == protocol.CodeDeadlineExceeded:
		// The node did not fail on its own: the execution ran out of time
		// while it ran. Say that, as when no node was running.
		r.fail(f.nodeID, msgDeadline)
		code = protocol.CodeDeadlineExceeded
	case f != nil:
		r.fail(f.nodeID, fmt.Sprintf("node %s failed: %s: %s", f.nodeID, f.err.Code, r.x.redact.String(f.err.Message)))
		code = f.err.Code
	case errors.Is(context.Cause(ctx), errDeadline):
		r.fail("", msgDeadline)
		code = protocol.CodeDeadlineExceeded
	default:
		r.fail("", "CANCELLED: cancelled: "+r.x.redact.String(err.Error()))
		code = protocol.CodeCancelled
	}
	return protocol.StatusFailed, code
}

// resultFits refuses a result whose encoding cannot fit in what the
// sink's stream limit leaves, before anything encodes it (authorjson.SizeWithin).
func (r *run) resultFits(out any) error {
	rs, ok := r.sink.(interface{ Room() int64 })
	if !ok {
		return nil
	}
	room := rs.Room()
	if room < 0 {
		return nil
	}
	// The line around the output: the header, usage and duration.
	const envelope = 512
	if _, fits, deep := authorjson.SizeWithin(out, max(room-envelope, 0)); deep {
		return &NodeError{Code: protocol.CodeLimitExceeded, Message: fmt.Sprintf(
			"the result nests deeper than %d levels, which JSON decoders refuse", authorjson.MaxDepth)}
	} else if !fits {
		return &NodeError{Code: protocol.CodeLimitExceeded, Message: fmt.Sprintf(
			"the result does not fit in the %d bytes the event stream's limit (maxStreamBytes) leaves", room)}
	}
	return nil
}

// msgDeadline is the terminal message of an execution out of time. Every
// terminal message names its code first ("CODE: …", or "node X failed:
// CODE: …" for a node at fault), so that one vocabulary serves them all.
const msgDeadline = "DEADLINE_EXCEEDED: deadline exceeded"

func (r *run) fail(nodeID, msg string) {
	_ = r.sink.Finish(&protocol.Error{Error: protocol.ExecutionError{Code: protocol.CodeExecutionFailed, Message: msg, NodeID: nodeID}})
}

func (r *run) usageSnapshot() protocol.Usage {
	return protocol.Usage{
		InputTokens:  r.usage.inputTokens.Load(),
		OutputTokens: r.usage.outputTokens.Load(),
		ModelCalls:   r.usage.modelCalls.Load(),
		ToolCalls:    r.usage.toolCalls.Load(),
		HTTPRequests: r.usage.httpRequests.Load() + r.svc.HTTPRequests(),
	}
}

// marshal encodes a value for the wire with every secret redacted, as
// the one encoder of author values writes it (appendJSON: HTML escaping
// off, as the event writer's); its callers have sized it.
func (r *run) marshal(v any) (json.RawMessage, error) {
	b, err := appendJSON(context.Background(), nil, v)
	if err != nil {
		return nil, err
	}
	red := r.x.redact.Bytes(b)
	// What appendJSON made is valid, whatever its depth (json.Valid
	// refuses nesting past 10,000, which made a deep output, no secret in
	// it, "[REDACTED]"): only a changed text is checked.
	if !bytes.Equal(red, b) && !json.Valid(red) {
		// A secret matched across JSON syntax (a number, say): redact the
		// value's strings instead and mask what is left.
		return json.Marshal(redact.Marker)
	}
	return red, nil
}

// tracedMargin is how far past a preview's cut its value is encoded and
// redacted.
const tracedMargin = 4 << 10

// traced returns v for a traced event: redacted and, beyond MaxEventBytes,
// replaced by a marker with a preview.
func (r *run) traced(v any) json.RawMessage {
	if !r.x.trace {
		return nil
	}
	if limit := r.x.limits.MaxEventBytes; limit > 0 {
		// Sized before it is encoded: a value can take six times its
		// bytes as JSON (each control character is \u0001), and sixteen
		// nodes tracing 4 MB outputs at once encoded 400 MB to send 1 MB.
		// Past the limit, only the start of it is encoded for the
		// preview, with room beyond the cut so that a secret across it
		// is redacted whole before the preview is cut.
		total, _, deep := authorjson.SizeWithin(v, 8*r.x.limits.MaxOutputBytes+int64(limit))
		if total > int64(limit) || deep {
			head, err := r.marshal(authorjson.Clip(v, int64(limit)/2+tracedMargin))
			if err != nil || deep {
				head = nil
			}
			return protocol.TruncatedPrefix(head, int(total), limit)
		}
	}
	b, err := r.marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"$unencodable": err.Error()})
	}
	if limit := r.x.limits.MaxEventBytes; limit > 0 && len(b) > limit {
		b = protocol.Truncated(b, limit)
	}
	return b
}

func (gr *graphRun) record(i int, st nodeState) {
	if st.status == protocol.NodeStatusSuspended {
		return
	}
	gr.states[i] = st
}

// gate decides whether a ready node runs: skip=true means it does not, with
// the state to record (skipped, or failed when `when` cannot be evaluated).
func (gr *graphRun) gate(ctx context.Context, i int) (nodeState, bool) {
	n := gr.g.nodes[i]
	if n.when != nil {
		// The scheduler waits for the gate: the evaluation is bounded by
		// the expression budgets, the node's timeout and ctx.
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if n.timeout > 0 {
			wctx, cancel = context.WithTimeout(ctx, n.timeout)
		}
		defer cancel()
		ev := newEvaluator(wctx, gr.sc, n.when.Template(), n.sight)
		v, err := ev.Run(n.when)
		if err != nil {
			ne := classify(err, wctx, ctx)
			gr.emitFailed(n, 1, 0, ne, false)
			return nodeState{status: protocol.NodeStatusFailed, err: ne}, true
		}
		b, ok := v.(bool)
		if !ok {
			why := ""
			if v == nil {
				why = ev.WhyNull(n.when)
			}
			ne := whenNotBoolean(n.when.Src(), v, why)
			gr.emitFailed(n, 1, 0, ne, false)
			return nodeState{status: protocol.NodeStatusFailed, err: ne}, true
		}
		if !b {
			return nodeState{status: protocol.NodeStatusSkipped}, true
		}
		return nodeState{}, false
	}
	if len(n.needs) == 0 {
		return nodeState{}, false
	}
	for _, k := range n.needs {
		if gr.states[k].status == protocol.NodeStatusCompleted {
			return nodeState{}, false
		}
	}
	return nodeState{status: protocol.NodeStatusSkipped}, true
}

// runNode runs a node's attempts. It is called on its own goroutine (or the
// scheduler's, for a node that runs inline), with a slot of the execution's
// concurrency taken for it unless it is composite.
func (gr *graphRun) runNode(ctx context.Context, i int) (st nodeState, f *graphFailure) {
	n := gr.g.nodes[i]
	r := gr.r
	id := gr.prefix + n.id
	if n.inner == nil {
		defer func() { <-r.sem }() // the slot execute took for it
	}
	defer func() {
		if p := recover(); p != nil {
			ne := &NodeError{Code: protocol.CodeFailed, Message: fmt.Sprintf("internal error in %s node: %v", n.typ, p)}
			st, f = nodeState{status: protocol.NodeStatusFailed, err: ne}, &graphFailure{nodeID: id, err: ne}
		}
	}()
	if c := r.nodes.Add(1); c > r.nodeCeiling() {
		// Refused, not run: what the batches reserved may have taken the
		// room first, and the count stays within the ceiling.
		r.nodes.Add(-1)
		ne := r.overNodes()
		gr.emitFailed(n, 1, 0, ne, false)
		return nodeState{status: protocol.NodeStatusFailed, err: ne}, &graphFailure{nodeID: id, err: ne}
	}
	// maxBackoffMs caps every wait, the first one included.
	maxBackoff := time.Duration(n.retry.MaxBackoffMs) * time.Millisecond
	backoff := min(time.Duration(n.retry.BackoffMs)*time.Millisecond, maxBackoff)
	for attempt := 1; ; attempt++ {
		began := r.now()
		out, inner, err := gr.attempt(ctx, n, id, attempt, began)
		if err == nil {
			return nodeState{status: protocol.NodeStatusCompleted, output: out}, nil
		}
		if errors.Is(err, errSuspended) {
			return nodeState{status: protocol.NodeStatusSuspended}, nil
		}
		var ne *NodeError
		errors.As(err, &ne) // attempt's failures are all *NodeError
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
			return nodeState{status: protocol.NodeStatusFailed, err: ne}, &graphFailure{nodeID: inner, err: ne}
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			ne := classify(ctx.Err(), ctx, ctx)
			// The last event said retrying:true; say the retry is off.
			gr.emitFailed(n, attempt, 0, ne, false)
			return nodeState{status: protocol.NodeStatusFailed, err: ne}, &graphFailure{nodeID: id, err: ne}
		}
		// In floating point, capped before the conversion: a factor such
		// as 1e10 overflowed time.Duration to a negative wait, and every
		// later attempt ran at once.
		backoff = time.Duration(min(float64(backoff)*n.retry.Factor, float64(maxBackoff)))
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

// attempt runs one attempt. It fails with errSuspended when the node waits
// for consent (the suspension recorded) and with a *NodeError, which
// carries the code, otherwise; inner names the innermost node at fault when
// the failure came from a sub-graph. started is when it began: its events'
// time, and its duration's start.
func (gr *graphRun) attempt(ctx context.Context, n *node, id string, attempt int, started time.Time) (out any, inner string, failure error) {
	r := gr.r
	// timeoutMs covers the evaluation of with as well as the step.
	actx, cancel := ctx, context.CancelFunc(func() {})
	if n.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, n.timeout)
	}
	defer cancel()
	if p, ok := r.x.pin(id, n.id); ok {
		return gr.pinnedAttempt(n, id, attempt, started, p)
	}
	// The call carries the evaluator of its with: one allocation for both.
	call := &Call{ID: id, Type: n.typ, Attempt: attempt, r: r, gr: gr, n: n, sc: gr.sc}
	call.ev.Init(actx, gr.sc, n.with, gr.sc.exprBudget(), n.sight)
	with, err := call.ev.Eval(n.with)
	if err != nil {
		ne := classify(err, actx, ctx)
		_ = r.sink.Emit(&protocol.NodeStarted{Header: protocol.Header{Time: started}, NodeID: id, NodeType: n.typ, Attempt: attempt})
		return nil, "", ne
	}
	var input json.RawMessage
	if r.x.trace {
		if n.valueOnly {
			input = r.traced(map[string]any{"value": with})
		} else {
			input = r.traced(with)
		}
	}
	emitLent(r, &startedEvents, protocol.NodeStarted{Header: protocol.Header{Time: started}, NodeID: id, NodeType: n.typ, Attempt: attempt, Role: roleFallback(call, with), Input: input})
	if _, ok := n.step.(WorkTimed); ok && n.timeout > 0 {
		// The rest of timeoutMs is the step's to apply once its work
		// starts; until then the execution's deadline bounds it.
		dl, _ := actx.Deadline()
		call.workTimeout = max(time.Until(dl), 1)
		actx = ctx
	}
	if o := r.x.e.Observer; o != nil {
		var end func(status, code string)
		actx, end = o.StartAttempt(actx, id, n.typ, attempt)
		defer func() { end(attemptStatus(failure), codeOf(failure)) }()
	}
	call.With, call.ctx = with, actx
	out, err = runStep(actx, n, call)
	ended := r.now()
	dur := ended.Sub(started).Milliseconds()
	if err != nil {
		if s := (*suspended)(nil); errors.As(err, &s) {
			r.suspend(id, n.typ, s)
			return nil, "", errSuspended
		}
		if errors.Is(err, errSuspended) {
			return nil, "", errSuspended // recorded by the node that asked
		}
		var f *graphFailure
		if errors.As(err, &f) {
			inner = f.nodeID
		}
		ne := classify(err, actx, ctx)
		ne.Message = r.x.redact.String(ne.Message)
		ne.queued = call.queued
		return nil, inner, ne
	}
	if ne := r.account(out); ne != nil {
		return nil, "", ne
	}
	emitLent(r, &completedEvents, protocol.NodeCompleted{Header: protocol.Header{Time: ended}, NodeID: id, NodeType: n.typ, Attempt: attempt, DurationMs: dur, Output: r.traced(out), Logs: r.tracedLogs(call.logs), QueuedMs: r.tracedQueue(call.queued)})
	return out, "", nil
}

// roleFallback is what a model or agent node's node.started says of its
// role when the model table answers it with the general entry, nil
// otherwise: a role missing from the table is not an error, so without
// this the author would never learn that the node ran on another model.
// with is the node's evaluated with.
func roleFallback(call *Call, with any) *protocol.RoleFallback {
	if call.Type != "model" && call.Type != "agent" {
		return nil
	}
	m, _ := with.(map[string]any)
	role, _ := m["role"].(string)
	if role == "" || !call.services().Models.FallsBack(role) {
		return nil
	}
	// The role is the author's, evaluated from any value: it is
	// redacted as every text of an event is.
	return &protocol.RoleFallback{Requested: call.r.x.redact.String(role), Used: models.GeneralRole}
}

// tracedQueue is how long an attempt waited for a sandbox worker, in
// milliseconds, for its events when the request is traced (0 otherwise,
// which the event omits).
func (r *run) tracedQueue(d time.Duration) int64 {
	if !r.x.trace {
		return 0
	}
	return d.Milliseconds()
}

// pinnedAttempt is an attempt of a pinned node: its events, its result
// as given.
func (gr *graphRun) pinnedAttempt(n *node, id string, attempt int, started time.Time, p pinned) (any, string, error) {
	r := gr.r
	_ = r.sink.Emit(&protocol.NodeStarted{Header: protocol.Header{Time: started}, NodeID: id, NodeType: n.typ, Attempt: attempt})
	if p.err != nil {
		ne := *p.err
		return nil, "", &ne
	}
	if ne := r.account(p.out); ne != nil {
		return nil, "", ne
	}
	ended := r.now()
	_ = r.sink.Emit(&protocol.NodeCompleted{Header: protocol.Header{Time: ended}, NodeID: id, NodeType: n.typ, Attempt: attempt, DurationMs: ended.Sub(started).Milliseconds(), Output: r.traced(p.out)})
	return p.out, "", nil
}

// attemptStatus names how an attempt ended, for its span.
func attemptStatus(err error) string {
	switch {
	case err == nil:
		return string(protocol.NodeStatusCompleted)
	case errors.Is(err, errSuspended):
		return string(protocol.NodeStatusSuspended)
	}
	return string(protocol.NodeStatusFailed)
}

// codeOf returns the code of a failed attempt ("" when it did not fail).
func codeOf(err error) string {
	var ne *NodeError
	if !errors.As(err, &ne) {
		return ""
	}
	return string(ne.Code)
}

// runStep runs one attempt of a Step and turns a panic into the attempt's
// failure, so that a started node still ends with node.failed (the recover
// in runNode only keeps the goroutine alive and cannot emit it).
func runStep(ctx context.Context, n *node, call *Call) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &NodeError{Code: protocol.CodeFailed, Message: fmt.Sprintf("internal error in %s node: %v", n.typ, p)}
		}
	}()
	return n.step.Run(ctx, call)
}

func (gr *graphRun) emitFailed(n *node, attempt int, dur int64, ne *NodeError, retrying bool) {
	if !retrying {
		gr.r.failed.add(n.typ, string(ne.Code))
	}
	_ = gr.r.sink.Emit(&protocol.NodeFailed{
		NodeID: gr.prefix + n.id, NodeType: n.typ, Attempt: attempt, DurationMs: dur,
		Error:    protocol.NodeError{Code: ne.Code, Message: gr.r.x.redact.String(ne.Message)},
		Retrying: retrying,
		Logs:     gr.r.tracedLogs(ne.logs),
		QueuedMs: gr.r.tracedQueue(ne.queued),
	})
}

// tracedLogs is a code node's console output for its event: traced like
// an output (redacted, cut to maxEventBytes), absent when there is none.
func (r *run) tracedLogs(logs []string) json.RawMessage {
	if len(logs) == 0 {
		return nil
	}
	return r.traced(logs)
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
	l := r.x.limits
	// Measured with a walk that stops once over the cap: an output of
	// shared references (let a1 = [a0, a0]; …) is exponentially larger
	// written out than the memory it holds, and SizeOf would walk it all.
	limit := l.MaxOutputBytes
	if limit <= 0 {
		limit = l.MemoryBudget
	}
	if limit <= 0 {
		limit = math.MaxInt64
	}
	size := lang.SizeWithin(out, limit)
	if l.MaxOutputBytes > 0 && size > l.MaxOutputBytes {
		return Errorf(protocol.CodeOutputTooLarge, "output of more than the per-node cap of %d bytes", l.MaxOutputBytes)
	}
	if total := r.budget.Add(size); l.MemoryBudget > 0 && total > l.MemoryBudget {
		r.budget.Add(-size)
		return Errorf(protocol.CodeMemoryBudgetExceeded, "node outputs would hold about %d bytes, over the execution's memory budget of %d bytes", total, l.MemoryBudget)
	}
	return nil
}

// output computes the graph's output: its output template, or an object of
// the outputs of completed sink nodes.
func (gr *graphRun) output(ctx context.Context) (any, error) {
	g := gr.g
	if g.hasOutput {
		return newEvaluator(ctx, gr.sc, g.output, &g.whole).Eval(g.output)
	}
	out := make(map[string]any, len(g.sinks))
	for _, i := range g.sinks {
		if gr.states[i].status == protocol.NodeStatusCompleted {
			out[g.nodes[i].id] = gr.states[i].output
		}
	}
	return out, nil
}

// The node events attempts lend a sink that copies them (run.copies). A
// chain node's started and completed events were 272 of the 900 bytes
// it allocated; every byte a run allocates is memory the next node's
// reads compete with in the cache, which is what made a chain of 10,000
// cost more per node than one of 1,000.
var (
	startedEvents   = sync.Pool{New: func() any { return new(protocol.NodeStarted) }}
	completedEvents = sync.Pool{New: func() any { return new(protocol.NodeCompleted) }}
)

// emitLent emits e: in an event of pool's, handed back once Emit returns,
// when the sink copies events; in one of its own, which the sink may keep,
// otherwise.
func emitLent[E any, P interface {
	*E
	protocol.Event
}](r *run, pool *sync.Pool, e E) {
	if !r.copies {
		p := P(new(E))
		*p = e
		_ = r.sink.Emit(p)
		return
	}
	p := pool.Get().(P)
	*p = e
	_ = r.sink.Emit(p)
	var zero E
	*p = zero // keep no output or input alive in the pool
	pool.Put(p)
}
