package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file is the child's side of a distributed map: one invocation runs
// one batch of the map's items with Engine.ServeBatch, exactly as the
// parent's map would run them in process, and streams the iterations'
// events followed by one end line (batch.End). The event and the lines are
// engine/batch's.

// ServeBatch runs the batch event describes (from a parent's FanOut) and
// writes its stream to w: the iterations' events as NDJSON lines, then the
// end line with the outputs, usage and failure or suspension. It returns an
// error, having written nothing, when the event is not a valid batch
// (batch.ErrNotBatch when it is no batch at all). The
// batch ends at the parent's deadline, and as soon as a write to w fails
// (the parent closed the stream).
func (e *Engine) ServeBatch(ctx context.Context, event []byte, w io.Writer) error {
	b, err := batch.Decode(event)
	if err != nil {
		return err
	}
	// A child prepares the parent's request as the parent did; it never
	// fans out itself, whatever its own ceiling, so distribution is on
	// only to let the document through.
	ce := *e
	ce.Limits.MaxFanOutInvocations = max(1, e.Limits.MaxFanOutInvocations)
	x, err := ce.PrepareBody(b.Request)
	if err != nil {
		return fmt.Errorf("batch request: %w", err)
	}
	i, ok := x.g.index[b.Node]
	var step *mapStep
	if ok {
		step, _ = x.g.nodes[i].step.(*mapStep)
	}
	if step == nil {
		x.discard()
		return fmt.Errorf("batch node %q is not a map of the workflow", b.Node)
	}
	items := make([]any, len(b.Items))
	for k, raw := range b.Items {
		if items[k], err = decodeJSON(raw); err != nil {
			x.discard()
			return fmt.Errorf("batch item %d: %w", b.Start+k, err)
		}
	}

	ctx, cancel := context.WithDeadline(ctx, batch.Deadline(b.DeadlineMs))
	defer cancel()
	bw := batch.NewWriter(w, cancel)
	// Before anything runs: what the parent learned is redacted here too,
	// and what this batch learns reaches the parent before it is sent.
	x.redact.Adopt(b.Learned, b.LearnCaps, bw.Learned)
	sink := protocol.NewWriter(bw, b.ExecutionID, bw.Flusher())
	end := x.runBatch(ctx, sink, b, i, step, items)
	if l := x.redact.LearnedSince(); !l.Empty() {
		end.Learned = &l
	}
	line, err := batch.EncodeEnd(end)
	if err != nil {
		line, _ = batch.EncodeEnd(&batch.End{Type: batch.EndType, Failure: &batch.Failure{NodeID: b.Node, Code: protocol.CodeFailed, Message: "the batch's outputs cannot be encoded"}})
	}
	_, err = bw.Write(line)
	return err
}

// runBatch runs the items of one batch in the scope the parent's map had.
func (x *Execution) runBatch(ctx context.Context, sink Sink, b *batch.Doc, at int, step *mapStep, items []any) *batch.End {
	r := &run{x: x, id: b.ExecutionID, sink: sink, start: time.Now()}
	// The batch may start its share of maxNodes, which the parent has
	// reserved for it: past it, a node fails as past maxNodes.
	r.nodeCap = min(b.MaxNodes, int64(x.limits.MaxNodes))
	ctx, gr, stop := r.open(ctx)
	defer stop()
	for id, st := range b.Scope {
		k, ok := x.g.index[id]
		if !ok {
			continue
		}
		ns := nodeState{status: st.Status}
		if len(st.Output) > 0 {
			ns.output, _ = decodeJSON(st.Output)
		}
		if st.Error != nil {
			ns.err = &NodeError{Code: st.Error.Code, Message: st.Error.Message}
		}
		gr.states[k] = ns
	}
	if b.NodeDeadlineMs > 0 {
		// The map's timeoutMs, ended a little early (at most the reserve)
		// so that the parent reads the failure it names before its own
		// timeout passes.
		dl := time.UnixMilli(b.NodeDeadlineMs)
		var cancelNode context.CancelFunc
		ctx, cancelNode = context.WithDeadline(ctx, dl.Add(-min(x.limits.Reserve, time.Until(dl)/4)))
		defer cancelNode()
	}
	n := x.g.nodes[at]
	call := &Call{ID: n.id, Type: n.typ, Attempt: 1, r: r, gr: gr, n: n, sc: gr.sc, ctx: ctx}
	outs, err := step.iterations(ctx, call, b.Start, items, max(1, b.Concurrency))
	end := &batch.End{Type: batch.EndType, Usage: r.usageSnapshot(), Nodes: min(r.nodes.Load(), r.nodeCap)}
	var f *graphFailure
	switch {
	case err == nil:
		end.Outputs = make([]json.RawMessage, len(outs))
		for k, v := range outs {
			raw, merr := r.marshal(v)
			if merr != nil {
				end.Outputs = nil
				end.Failure = &batch.Failure{NodeID: fmt.Sprintf("%s[%d]", n.id, b.Start+k), Code: protocol.CodeFailed, Message: "output cannot be encoded: " + merr.Error()}
				break
			}
			end.Outputs[k] = raw
		}
	case r.suspended.Load():
		r.mu.Lock()
		end.Suspended = r.suspensions
		r.mu.Unlock()
	case errors.As(err, &f):
		end.Failure = &batch.Failure{NodeID: f.nodeID, Code: f.err.Code, Message: x.redact.String(f.err.Message)}
	default:
		ne := classify(err, ctx, ctx)
		end.Failure = &batch.Failure{NodeID: n.id, Code: ne.Code, Message: x.redact.String(ne.Message)}
	}
	return end
}

// nodeCeiling is the count past which a node of this run fails maxNodes:
// the execution's maxNodes, or in a batch's child its allowance.
func (r *run) nodeCeiling() int64 {
	if r.nodeCap > 0 {
		return r.nodeCap
	}
	return int64(r.x.limits.MaxNodes)
}

// overNodes is the failure of a node past nodeCeiling.
func (r *run) overNodes() *NodeError {
	if r.nodeCap > 0 {
		return Errorf(protocol.CodeLimitExceeded, "execution ran more than maxNodes (%d) nodes: this batch of a distributed map may start %d of them, its share", r.x.limits.MaxNodes, r.nodeCap)
	}
	return Errorf(protocol.CodeLimitExceeded, "execution ran more than maxNodes (%d) nodes", r.x.limits.MaxNodes)
}
