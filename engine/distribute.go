package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/engine/jsonweight"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// This file is the parent's side of a distributed map (with.distribute):
// the map's items are cut into batches, each batch runs in another
// invocation of this function through Services.FanOut, and the children's
// events come back through the parent's own sink. batch.go is the child's
// side; both share the event and the lines of engine/batch.

// FanOut starts child invocations of this function for the batches of a
// distributed map. engine/fanout's Client is one (Lambda's
// InvokeWithResponseStream).
type FanOut interface {
	// Invoke runs one child invocation whose event is payload (what
	// Engine.ServeBatch reads) and returns its response stream as it is
	// produced. The caller closes it; cancelling ctx ends the invocation's
	// stream. An invocation that is throttled is retried until ctx ends.
	Invoke(ctx context.Context, payload []byte) (io.ReadCloser, error)
}

// distribution is a map's with.distribute, checked at Prepare.
type distribution struct {
	batchSize   int // 0: chosen by the runner
	invocations int
}

// prepareDistribute checks with.distribute: literal numbers only, since
// how the work is spread is fixed before any node runs.
func prepareDistribute(c *Compiler) *distribution {
	raw, ok := c.Raw("distribute")
	if !ok {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		c.Errorf("distribute", "must be an object {batchSize?, invocations}, got %s", JSONType(raw))
		return nil
	}
	limit := c.Limits().MaxFanOutInvocations
	if limit <= 0 {
		c.Errorf("distribute", "this runner does not distribute maps: RUNNER_MAX_FANOUT_INVOCATIONS is 0 (capabilities constraints.maxFanOutInvocations); remove distribute to run the map in one invocation")
		return nil
	}
	// Only a map of the workflow's own top-level graph fans out: its
	// outer scope is the top-level nodes and the input, which a batch can
	// carry; a child never fans out again.
	if strings.Count(c.n.path, ".nodes[") != 1 || !strings.HasPrefix(c.n.path, "workflow.nodes[") {
		c.Errorf("distribute", "only a map among the workflow's top-level nodes can be distributed (not one inside a map or a child workflow)")
		return nil
	}
	d := &distribution{}
	whole := func(field string, required bool, hi int) (int, bool) {
		v, present := m[field]
		if !present {
			if required {
				c.Errorf("distribute."+field, "required: the most child invocations running at once")
			}
			return 0, false
		}
		n, isInt := lang.AsInt(v)
		if !isInt || n < 1 || n > hi {
			c.Errorf("distribute."+field, "must be a whole number from 1 to %d", hi)
			return 0, false
		}
		return n, true
	}
	for k := range m {
		if k != "batchSize" && k != "invocations" {
			c.Errorf("distribute."+k, "unknown field (distribute has batchSize and invocations)")
		}
	}
	d.batchSize, _ = whole("batchSize", false, c.Limits().MaxMapItems)
	n, ok := whole("invocations", true, 10_000)
	if !ok {
		return nil
	}
	d.invocations = n
	c.p.fanout = true
	return d
}

// distribute runs the map's items in child invocations and returns their
// outputs in item order, failing as the in-process map would.
func (s *mapStep) distribute(ctx context.Context, call *Call, items []any, conc int) ([]any, error) {
	r := call.r
	fo := r.x.e.Services.FanOut
	if fo == nil || r.x.body == nil {
		return nil, Errorf(protocol.CodeInvocationFailed, "this runner has no fan-out client configured")
	}
	scope, held, err := outerStates(ctx, call)
	defer held.release()
	if err != nil {
		return nil, err
	}
	// The children run to the execution's deadline; a map's timeoutMs
	// that ends it earlier is sent apart, so that a child fails its
	// iterations TIMEOUT as the map in process does, not DEADLINE_EXCEEDED.
	deadline, _ := ctx.Deadline()
	head := batch.Doc{
		Version: batch.Version, ExecutionID: r.id, Request: r.x.body, Node: call.n.id,
		Concurrency: conc, Scope: scope, DeadlineMs: deadline.UnixMilli(),
	}
	if !r.deadline.IsZero() && deadline.Before(r.deadline) {
		head.DeadlineMs, head.NodeDeadlineMs = r.deadline.UnixMilli(), deadline.UnixMilli()
	}
	// The event's fields but a batch's own, encoded once for every batch
	// (batchPayload).
	common, err := batch.EncodeHead(&head)
	if err != nil {
		return nil, Errorf(protocol.CodeFailed, "batch event: %v", err)
	}
	room := int64(batch.MaxPayloadBytes - len(common) - batch.TailBytes)
	if len(r.x.secretValues) > 0 {
		room -= secrets.LearnedDocBytes // what the redactor learned rides along
	}
	if room <= 0 {
		return nil, Errorf(protocol.CodeLimitExceeded, "the request and the outer nodes' outputs take %d bytes, over what one child invocation's event can carry (%d bytes)", len(common), batch.MaxPayloadBytes)
	}
	// Each item is sized as it will be written, never encoded here: a
	// batch's items are encoded into its event when it is sent, charged
	// to the memory budget while the event is held (batchPayload).
	sizes := make([]int64, len(items))
	for i, it := range items {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		n, err := sizeAuthor(fmt.Sprintf("item %d", i), it, room)
		if err != nil {
			var ne *NodeError
			if errors.As(err, &ne) && ne.Code == protocol.CodeLimitExceeded && !strings.Contains(ne.Message, "nests") {
				ne.Message += fmt.Sprintf(", over what one child invocation's event can carry (%d bytes with the request)", room)
			}
			return nil, err
		}
		sizes[i] = n
	}
	inv := min(s.dist.invocations, r.x.limits.MaxFanOutInvocations)
	size := s.dist.batchSize
	if size == 0 {
		size = (len(items) + inv - 1) / inv
	}
	bs, err := batch.Pack(sizes, max(1, size), room)
	if err != nil {
		return nil, &NodeError{Code: protocol.CodeLimitExceeded, Message: err.Error()}
	}

	d := newDispatch(ctx)
	defer d.cancel()
	ctx = d.ctx
	out := make([]any, len(items))
	// inv bounds this map's invocations; the execution's slots bound those
	// of all its distributed maps together, at maxFanOutInvocations: maps
	// side by side do not multiply it.
	slots, all := make(chan struct{}, inv), r.fanOutSlots()
	// Each batch is sent with its allowance of maxNodes reserved
	// (distribute_count.go); one that finds too little left waits for
	// this map's batches in flight to give back what they did not use.
	perItem, remaining := s.nodesPerItem(), int64(len(items))
	freed := make(chan struct{}, 1)
	inFlight := 0 // under d.mu
loop:
	for k, b := range bs {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break loop
		}
		select {
		case all <- struct{}{}:
		case <-ctx.Done():
			<-slots
			break loop
		}
		if call.suspending() || ctx.Err() != nil {
			<-all
			<-slots
			break
		}
		count := &batchCount{items: int64(b.N)}
		for {
			d.mu.Lock()
			busy := inFlight
			d.mu.Unlock()
			if count.allowance = r.reserveNodes(count.items, remaining, perItem); count.allowance > 0 {
				break
			}
			if busy == 0 {
				d.mu.Lock()
				if d.first == nil {
					d.first = Errorf(protocol.CodeLimitExceeded, "execution ran more than maxNodes (%d) nodes: the batch of items %d to %d counts one an item at least, over what remains", r.x.limits.MaxNodes, b.Start, b.Start+b.N-1)
				}
				d.mu.Unlock()
				<-all
				<-slots
				break loop
			}
			select {
			case <-freed:
			case <-ctx.Done():
				<-all
				<-slots
				break loop
			}
		}
		remaining -= count.items
		doc := head
		doc.Start = b.Start
		doc.MaxNodes = count.allowance
		part := items[b.Start : b.Start+b.N]
		bsize := b.Size
		d.mu.Lock()
		inFlight++
		d.mu.Unlock()
		var share *secrets.Share // the share lent, until the batch ends
		if len(r.x.secretValues) > 0 {
			doc.Learned, doc.LearnCaps, share = r.x.redact.Lend(learnSlots(slots, all, len(bs)-k))
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer func() { <-all; <-slots }()
			vals, err := s.runBatch(ctx, call, fo, &doc, share, batchItems{common: common, items: part, size: bsize}, count)
			r.settleNodes(count)
			d.mu.Lock()
			defer d.mu.Unlock()
			inFlight--
			select {
			case freed <- struct{}{}:
			default:
			}
			if err != nil {
				// Under the lock that counts the batch out of inFlight:
				// the loop, finding no batch in flight, finds this
				// failure kept and does not put maxNodes' in its place.
				d.failLocked(err)
				return
			}
			copy(out[doc.Start:], vals)
		}()
	}
	if err := d.wait(call); err != nil {
		return nil, err
	}
	// Scrubbed again with all the batches have learned: one batch's output
	// may hold what another sent.
	r.x.redact.Rescrub(out)
	return out, nil
}

// fanOutSlots returns the semaphore of the execution's child invocations.
func (r *run) fanOutSlots() chan struct{} {
	r.fanSlotsOnce.Do(func() { r.fanSlots = make(chan struct{}, max(1, r.x.limits.MaxFanOutInvocations)) })
	return r.fanSlots
}

// outerStates returns the states of the top-level nodes the map may read
// (its ancestors that have ended), as a batch carries them, with what
// their outputs' JSON holds of the memory budget until the map ends.
func outerStates(ctx context.Context, call *Call) (map[string]batch.State, heldBytes, error) {
	g := call.gr.g
	i, ok := g.index[call.n.id]
	if !ok {
		return nil, nil, nil
	}
	out := map[string]batch.State{}
	var held heldBytes
	top := sight{g: g, i: i} // a distributed map is a top-level node
	for _, id := range top.Ancestors() {
		k := g.index[id]
		st := call.gr.states[k]
		if st.status == "" || k == i {
			continue
		}
		bs := batch.State{Status: st.status}
		if st.output != nil {
			a, err := call.r.encodeAuthor(ctx, "the output of node "+id+", which the batches carry", st.output, batch.MaxPayloadBytes)
			if err != nil {
				return nil, held, err
			}
			held = append(held, a)
			bs.Output = a.B
		}
		if st.err != nil {
			bs.Error = &protocol.NodeError{Code: st.err.Code, Message: st.err.Message}
		}
		out[id] = bs
	}
	return out, held, nil
}

// heldBytes are encoded values charged until the caller releases them.
type heldBytes []*authorBytes

func (h heldBytes) release() {
	for _, a := range h {
		a.release()
	}
}

// batchItems are a batch's items, to be encoded into its event: common is
// the event's encoding without the batch's own fields (batch.EncodeHead),
// size the items' JSON with their commas.
type batchItems struct {
	common []byte
	items  []any
	size   int64
}

// batchPayload is doc's event: the common part, the batch's own fields
// and its items, sized before and charged to the memory budget while the
// caller holds it, each item encoded once into it (appendJSON).
func (r *run) batchPayload(ctx context.Context, what string, doc *batch.Doc, b batchItems) (*authorBytes, error) {
	own, err := batch.EncodeOwn(doc)
	if err != nil {
		return nil, Errorf(protocol.CodeFailed, "%s: encoding its event: %v", what, err)
	}
	n := batch.PayloadBytes(b.common, own, b.size)
	a, err := r.chargeAuthor(what+"'s event", n)
	if err != nil {
		return nil, err
	}
	buf := batch.AppendHead(make([]byte, 0, n), b.common, own)
	for i, it := range b.items {
		if i > 0 {
			buf = append(buf, ',')
		}
		if buf, err = appendJSON(ctx, buf, it); err != nil {
			a.release()
			return nil, encodeError(fmt.Sprintf("%s: item %d", what, doc.Start+i), err)
		}
	}
	a.B = batch.AppendTail(buf)
	return a, nil
}

// runBatch runs one batch in a child invocation and forwards its events.
// It returns the batch's outputs, or the failure that ends the map.
func (s *mapStep) runBatch(ctx context.Context, call *Call, fo FanOut, doc *batch.Doc, share *secrets.Share, items batchItems, count *batchCount) ([]any, error) {
	r := call.r
	defer r.x.redact.Release(share)
	last := doc.Start + len(items.items) - 1
	what := fmt.Sprintf("batch of items %d to %d", doc.Start, last)
	payload, err := r.batchPayload(ctx, what, doc, items)
	if err != nil {
		return nil, err
	}
	// The event is sent once Invoke returns (it retries a throttled
	// invocation inside).
	rc, err := fo.Invoke(ctx, payload.B)
	payload.release()
	payload.B = nil
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, Errorf(protocol.CodeInvocationFailed, "%s: child invocation failed: %s", what, r.x.redact.String(err.Error()))
	}
	defer rc.Close()
	end, held, err := r.forward(ctx, call.ID+"[", rc, count, share)
	defer func() { r.budget.Add(-held) }()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ne *NodeError
		if errors.As(err, &ne) {
			return nil, ne
		}
		return nil, Errorf(protocol.CodeInvocationFailed, "%s: child invocation ended without its result: %s", what, r.x.redact.String(err.Error()))
	}
	count.ended, count.reported = true, end.Nodes
	if end.Learned != nil {
		if err := r.x.redact.Absorb(*end.Learned, share); err != nil {
			return nil, codedError(err)
		}
	}
	r.usage.inputTokens.Add(end.Usage.InputTokens)
	r.usage.outputTokens.Add(end.Usage.OutputTokens)
	r.usage.modelCalls.Add(end.Usage.ModelCalls)
	r.usage.toolCalls.Add(end.Usage.ToolCalls)
	r.usage.httpRequests.Add(end.Usage.HTTPRequests)
	if len(end.Suspended) > 0 {
		for i := range end.Suspended {
			end.Suspended[i].Resource = r.x.redact.String(end.Suspended[i].Resource)
		}
		r.mu.Lock()
		r.suspensions = append(r.suspensions, end.Suspended...)
		r.mu.Unlock()
		r.suspended.Store(true)
		return nil, errSuspended
	}
	if f := end.Failure; f != nil {
		return nil, &graphFailure{nodeID: f.NodeID, err: &NodeError{Code: f.Code, Message: r.x.redact.String(f.Message)}}
	}
	if len(end.Outputs) != len(items.items) {
		return nil, Errorf(protocol.CodeInvocationFailed, "%s: the child returned %d outputs for %d items", what, len(end.Outputs), len(items.items))
	}
	// The iterations' outputs were held in the child; here they are held
	// again until the map ends, as an in-process map holds them. Each is
	// weighed before it is decoded (JSON can decode to many times its
	// bytes), while the stream's bytes are still charged.
	l := r.x.limits
	vals := make([]any, len(end.Outputs))
	var size int64
	over := func() ([]any, error) {
		r.budget.Add(-size)
		return nil, Errorf(protocol.CodeMemoryBudgetExceeded, "%s: its outputs would put node outputs over the execution's memory budget of %d bytes", what, l.MemoryBudget)
	}
	for i, o := range end.Outputs {
		w := jsonweight.Of(o)
		size += w
		if r.budget.Add(w) > l.MemoryBudget {
			return over()
		}
		v, err := decodeJSON(o)
		if err != nil {
			r.budget.Add(-size)
			return nil, Errorf(protocol.CodeInvocationFailed, "%s: output %d is not JSON", what, doc.Start+i)
		}
		end.Outputs[i] = nil
		vals[i] = v
		if d := lang.SizeWithin(v, l.MemoryBudget+1) - w; d != 0 {
			size += d
			if r.budget.Add(d) > l.MemoryBudget {
				return over()
			}
		}
	}
	return vals, nil
}

// forward reads a child's stream: each event is emitted through the
// parent's sink (so the parent's bounds and redaction apply again), node
// instances are counted against the batch's allowance of maxNodes (count),
// and the end line is returned.
//
// What a line holds while it is read is charged to the execution's memory
// budget, which the node outputs held and every other child's stream share:
// a line is read whole before it can be decoded, and the end line carries a
// batch's outputs, up to the child's own budget. The end is returned with
// what is still charged for it (the line and the outputs' copies), which the
// caller releases once it has charged the decoded outputs.
func (r *run) forward(ctx context.Context, prefix string, rc io.Reader, count *batchCount, share *secrets.Share) (*batch.End, int64, error) {
	br := bufio.NewReaderSize(rc, 64<<10)
	l := r.x.limits
	// A line carries one event (bounded by maxEventBytes in the child) or
	// the end with the batch's outputs (bounded by the memory budget).
	limit := l.MemoryBudget + int64(l.MaxEventBytes) + 64<<10
	var line []byte
	var held int64 // charged to r.budget: the line's buffer, then the end's copies
	charge := func(n int64) error {
		held += n
		if r.budget.Add(n) > l.MemoryBudget {
			return Errorf(protocol.CodeMemoryBudgetExceeded, "the stream of a child invocation would put node outputs over the execution's memory budget of %d bytes", l.MemoryBudget)
		}
		return nil
	}
	fail := func(err error) (*batch.End, int64, error) {
		r.budget.Add(-held)
		return nil, 0, err
	}
	for {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		chunk, err := br.ReadSlice('\n')
		c := cap(line)
		line = append(line, chunk...)
		if int64(len(line)) > limit {
			return fail(fmt.Errorf("a line of the child's stream is over %d bytes", limit))
		}
		if grown := cap(line) - c; grown > 0 {
			if err := charge(int64(grown)); err != nil {
				return fail(err)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fail(err)
		}
		if batch.IsEndLine(line) {
			// Decoding the end copies its outputs: charged first.
			if err := charge(int64(len(line))); err != nil {
				return fail(err)
			}
		}
		end, err := r.forwardLine(prefix, line, count, share)
		if err != nil {
			return fail(err)
		}
		if end != nil {
			return end, held, nil
		}
		line = line[:0]
	}
}

// forwardLine emits one event line of a child, or returns its end. A
// private line (what the child's redactor learned) is learned, never
// emitted.
func (r *run) forwardLine(prefix string, line []byte, count *batchCount, share *secrets.Share) (*batch.End, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return nil, fmt.Errorf("a line of the child's stream is not JSON: %w", err)
	}
	var ev protocol.Event
	switch head.Type {
	case batch.EndType:
		end, err := batch.DecodeEnd(line)
		if err != nil {
			return nil, fmt.Errorf("the child's end line: %w", err)
		}
		return end, nil
	case batch.LearnedType:
		return nil, r.learnFromBatch(line, share)
	case protocol.TypeNodeStarted, protocol.TypeNodeCompleted, protocol.TypeNodeFailed,
		protocol.TypeNodeSuspended, protocol.TypePermissionDecision:
		ev = protocol.NewEvent(head.Type)
	default:
		return nil, fmt.Errorf("the child's stream has an event of type %q", head.Type)
	}
	if err := json.Unmarshal(line, ev); err != nil {
		return nil, fmt.Errorf("a %s event of the child: %w", head.Type, err)
	}
	red := r.x.redact
	var id string
	switch e := ev.(type) {
	case *protocol.NodeStarted:
		id, e.Input = e.NodeID, r.reredact(e.Input)
		if e.Role != nil {
			e.Role.Requested = red.String(e.Role.Requested)
		}
		// The batch's allowance is already in r.nodes: a child that
		// starts more than it is stopped here.
		if e.Attempt == 1 {
			if count.started++; count.started > count.allowance {
				return nil, Errorf(protocol.CodeLimitExceeded, "execution ran more than maxNodes (%d) nodes: a batch of a distributed map started more than its share (%d)", r.x.limits.MaxNodes, count.allowance)
			}
		}
	case *protocol.NodeCompleted:
		id, e.Output = e.NodeID, r.reredact(e.Output)
	case *protocol.NodeFailed:
		id, e.Error.Message = e.NodeID, red.String(e.Error.Message)
		if !e.Retrying {
			r.failed.add(e.NodeType, string(e.Error.Code))
		}
	case *protocol.NodeSuspended:
		id, e.Request.Resource = e.NodeID, red.String(e.Request.Resource)
	case *protocol.PermissionDecision:
		id, e.Resource, e.Reason = e.NodeID, red.String(e.Resource), red.String(e.Reason)
	}
	// A child runs iterations of this map only: anything else is not
	// passed on.
	if !strings.HasPrefix(id, prefix) {
		return nil, fmt.Errorf("the child's stream names node %q, outside the map", red.String(id))
	}
	_ = r.sink.Emit(ev)
	return nil, nil
}

// reredact passes a child's traced value through the parent's redactor.
func (r *run) reredact(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b
	}
	out := r.x.redact.Bytes(b)
	if !json.Valid(out) {
		m, _ := json.Marshal(redact.Marker)
		return m
	}
	return out
}
