package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/engine/distribute"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file is the engine's part of the parent's side of a distributed
// map (with.distribute): its check at Prepare, the batches planned from
// the engine's values (the outer nodes' states and the items, sized
// through the one choke point of author values, packed into events), and
// the execution's accounts they run against. engine/distribute sends them
// through Services.FanOut and forwards the children's events into the
// parent's own sink. batch.go is the child's side; both share the event
// and the lines of engine/batch.

// FanOut starts child invocations of this function for the batches of a
// distributed map (distribute.FanOut). engine/fanout's Client is one
// (Lambda's InvokeWithResponseStream).
type FanOut = distribute.FanOut

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
	// (run.Event).
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
	// to the memory budget while the event is held (run.Event).
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

	// The batches run against the execution's accounts: its node count,
	// memory budget, events, fan-out slots and redactor.
	l := r.x.limits
	p := &distribute.Parent{
		Exec: r, Sink: r.sink, Redact: r.x.redact, Learns: len(r.x.secretValues) > 0,
		Nodes: &r.nodes, Budget: &r.budget, MaxNodes: l.MaxNodes, MemoryBudget: l.MemoryBudget, MaxEventBytes: l.MaxEventBytes,
		Slots: r.fanOutSlots(),
	}
	out, err := p.Run(ctx, &distribute.Batches{
		FanOut: fo, Head: head, Common: common, Items: items, Spans: bs,
		Invocations: inv, PerItem: s.nodesPerItem(), Prefix: call.ID + "[",
	})
	if err != nil {
		return nil, err
	}
	// Scrubbed again with all the batches have learned: one batch's output
	// may hold what another sent.
	r.x.redact.Rescrub(out)
	return out, nil
}

// nodesPerItem is the most nodes one iteration of the map can start, or 0
// when a composite node in it (a map, a child workflow) makes it unknown
// before it runs.
func (s *mapStep) nodesPerItem() int64 {
	for _, n := range s.sub.nodes {
		if n.inner != nil {
			return 0
		}
	}
	return int64(max(1, len(s.sub.nodes)))
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

// The run is the execution a distributed map's batches run in
// (distribute.Execution): it encodes their events at the choke point of
// author values, and takes in what their ends report.
var _ distribute.Execution = (*run)(nil)

// Event is a batch's event: the common part, the batch's own fields and
// its items, sized before and charged to the memory budget while the
// caller holds it, each item encoded once into it (appendJSON).
func (r *run) Event(ctx context.Context, what string, doc *batch.Doc, b distribute.Items) ([]byte, func(), error) {
	own, err := batch.EncodeOwn(doc)
	if err != nil {
		return nil, nil, Errorf(protocol.CodeFailed, "%s: encoding its event: %v", what, err)
	}
	n := batch.PayloadBytes(b.Common, own, b.Size)
	a, err := r.chargeAuthor(what+"'s event", n)
	if err != nil {
		return nil, nil, err
	}
	buf := batch.AppendHead(make([]byte, 0, n), b.Common, own)
	for i, it := range b.Items {
		if i > 0 {
			buf = append(buf, ',')
		}
		if buf, err = appendJSON(ctx, buf, it); err != nil {
			a.release()
			return nil, nil, encodeError(fmt.Sprintf("%s: item %d", what, doc.Start+i), err)
		}
	}
	return batch.AppendTail(buf), a.release, nil
}

// Ended adds a batch's usage to the execution's, and returns the
// suspension (recorded, its resources redacted) or the failure (its
// message redacted) that ends the map.
func (r *run) Ended(end *batch.End) error {
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
		return errSuspended
	}
	if f := end.Failure; f != nil {
		return &graphFailure{nodeID: f.NodeID, err: &NodeError{Code: f.Code, Message: r.x.redact.String(f.Message)}}
	}
	return nil
}

// Suspending is errSuspended while the execution waits for a consent, nil
// otherwise: a distributed map sends no batch after it.
func (r *run) Suspending() error {
	if r.suspended.Load() {
		return errSuspended
	}
	return nil
}

// NodeFailed counts a node's final failure, for metrics.
func (r *run) NodeFailed(nodeType, code string) { r.failed.add(nodeType, code) }
