package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file is the child's side of a distributed map: one invocation runs
// one batch of the map's items with Engine.ServeBatch, exactly as the
// parent's map would run them in process, and streams the iterations'
// events followed by one end line (batchEnd).

// BatchEventField is the one member of a batch's event: a Lambda event with
// it is a batch, which no function URL or API Gateway event can be (their
// shapes are AWS's, and a request's body arrives inside them as a string).
const BatchEventField = "runnerFanOutBatch"

const (
	batchVersion = 1
	batchEndType = "batch.end"
)

// batchEvent is the event of a child invocation.
type batchEvent struct {
	Batch *batchDoc `json:"runnerFanOutBatch"`
}

// batchDoc is what a child needs to run its items as the parent would: the
// request itself (workflow, input, runtime, permissions, grants), the map's
// node, the items with the index of the first, the outer nodes' states, the
// map's concurrency, the parent's deadline and the batch's share of maxNodes.
type batchDoc struct {
	Version     int                   `json:"v"`
	ExecutionID string                `json:"executionId"`
	Request     json.RawMessage       `json:"request"`
	Node        string                `json:"node"`
	Start       int                   `json:"start,omitempty"`
	Items       []json.RawMessage     `json:"items,omitempty"` // the parent writes them (batchPayload)
	Concurrency int                   `json:"concurrency"`
	Scope       map[string]batchState `json:"scope,omitempty"`
	DeadlineMs  int64                 `json:"deadlineMs"`
	// NodeDeadlineMs, when set, is the map's own timeoutMs's end, before
	// the execution's: its iterations then fail TIMEOUT.
	NodeDeadlineMs int64 `json:"nodeDeadlineMs,omitempty"`
	// MaxNodes is the most nodes the batch may start: its share of what
	// remained of the execution's maxNodes when it was sent (distribute_count.go).
	MaxNodes int64 `json:"maxNodes,omitempty"`
	// Learned is what the parent's redactor had learned (values built from
	// secrets) when it sent the batch, which the child knows before it
	// runs anything; LearnCaps, the totals the child's may reach: that
	// plus the batch's share of the execution's bounds (engine/secrets/share.go).
	Learned   *secrets.Learned `json:"learned,omitempty"`
	LearnCaps *secrets.Caps    `json:"learnCaps,omitempty"`

	share *secrets.Share // the parent's: the share lent, until the batch ends
}

// batchState is an outer node's state as a batch carries it.
type batchState struct {
	Status protocol.NodeStatus `json:"status"`
	Output json.RawMessage     `json:"output,omitempty"`
	Error  *protocol.NodeError `json:"error,omitempty"`
}

// batchEnd is the last line of a child's stream.
type batchEnd struct {
	Type      string                `json:"type"`
	Outputs   []json.RawMessage     `json:"outputs,omitempty"`
	Usage     protocol.Usage        `json:"usage"`
	Failure   *batchFailure         `json:"failure,omitempty"`
	Suspended []protocol.Suspension `json:"suspended,omitempty"`
	// Nodes is how many nodes the batch started, at most its MaxNodes.
	Nodes int64 `json:"nodes"`
	// Learned is everything the child's redactor learned beyond what the
	// parent sent, each value already reported on a private line.
	Learned *secrets.Learned `json:"learned,omitempty"`
}

// batchFailure is the failure that ended a batch, as the parent's map
// fails with it.
type batchFailure struct {
	NodeID  string        `json:"nodeId"`
	Code    protocol.Code `json:"code"`
	Message string        `json:"message"`
}

// ErrNotBatch is returned by ServeBatch for an event that is not a batch.
var ErrNotBatch = errors.New("not a batch event")

// ServeBatch runs the batch event describes (from a parent's FanOut) and
// writes its stream to w: the iterations' events as NDJSON lines, then the
// end line with the outputs, usage and failure or suspension. It returns an
// error, having written nothing, when the event is not a valid batch. The
// batch ends at the parent's deadline, and as soon as a write to w fails
// (the parent closed the stream).
func (e *Engine) ServeBatch(ctx context.Context, event []byte, w io.Writer) error {
	var ev batchEvent
	if err := json.Unmarshal(event, &ev); err != nil || ev.Batch == nil {
		return ErrNotBatch
	}
	b := ev.Batch
	if b.Version != batchVersion {
		return fmt.Errorf("batch event version %d, want %d", b.Version, batchVersion)
	}
	if b.MaxNodes < 1 {
		return fmt.Errorf("batch event maxNodes %d, want at least 1", b.MaxNodes)
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

	ctx, cancel := context.WithDeadline(ctx, batchDeadline(b.DeadlineMs))
	defer cancel()
	bw := &breakingWriter{w: w, cancel: cancel, flush: flusherOf(w)}
	// Before anything runs: what the parent learned is redacted here too,
	// and what this batch learns reaches the parent before it is sent.
	x.redact.Adopt(b.Learned, b.LearnCaps, bw.learned)
	sink := protocol.NewWriter(bw, b.ExecutionID, bw.flusher())
	end := x.runBatch(ctx, sink, b, i, step, items)
	if l := x.redact.LearnedSince(); !l.Empty() {
		end.Learned = &l
	}
	line, err := encodeEnd(end)
	if err != nil {
		line, _ = encodeEnd(&batchEnd{Type: batchEndType, Failure: &batchFailure{NodeID: b.Node, Code: protocol.CodeFailed, Message: "the batch's outputs cannot be encoded"}})
	}
	_, err = bw.Write(line)
	return err
}

// encodeEnd is the end line, HTML escaping off: the outputs in it were
// written without (run.marshal), and escaping them again as they are
// copied would make each < six bytes of a line the parent bounds.
func encodeEnd(end *batchEnd) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(end)
	return buf.Bytes(), err
}

// runBatch runs the items of one batch in the scope the parent's map had.
func (x *Execution) runBatch(ctx context.Context, sink Sink, b *batchDoc, at int, step *mapStep, items []any) *batchEnd {
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
	end := &batchEnd{Type: batchEndType, Usage: r.usageSnapshot(), Nodes: min(r.nodes.Load(), r.nodeCap)}
	var f *graphFailure
	switch {
	case err == nil:
		end.Outputs = make([]json.RawMessage, len(outs))
		for k, v := range outs {
			raw, merr := r.marshal(v)
			if merr != nil {
				end.Outputs = nil
				end.Failure = &batchFailure{NodeID: fmt.Sprintf("%s[%d]", n.id, b.Start+k), Code: protocol.CodeFailed, Message: "output cannot be encoded: " + merr.Error()}
				break
			}
			end.Outputs[k] = raw
		}
	case r.suspended.Load():
		r.mu.Lock()
		end.Suspended = r.suspensions
		r.mu.Unlock()
	case errors.As(err, &f):
		end.Failure = &batchFailure{NodeID: f.nodeID, Code: f.err.Code, Message: x.redact.String(f.err.Message)}
	default:
		ne := classify(err, ctx, ctx)
		end.Failure = &batchFailure{NodeID: n.id, Code: ne.Code, Message: x.redact.String(ne.Message)}
	}
	return end
}

// breakingWriter cancels the batch at the first failed write: the parent
// has closed the stream (disconnected, failed or past its deadline), and
// nothing the batch does can reach it any more.
type breakingWriter struct {
	mu     sync.Mutex
	w      io.Writer
	flush  func() error // w's, or nil
	cancel context.CancelFunc
	err    error
}

func (b *breakingWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.write(p)
}

// flusher returns the Writer's flush: w's, serialized with the writes.
func (b *breakingWriter) flusher() func() error {
	if b.flush == nil {
		return nil
	}
	return func() error {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.flushLocked()
	}
}

func (b *breakingWriter) flushLocked() error {
	if b.err != nil {
		return b.err
	}
	if err := b.flush(); err != nil {
		b.err = err
		b.cancel()
		return err
	}
	return nil
}

// learned writes the private line that reports what the batch's redactor
// learned, and flushes it, before the request that carries it is sent.
func (b *breakingWriter) learned(set secrets.Learned) error {
	line, err := json.Marshal(batchLearned{Type: batchLearnedType, Learned: set})
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.write(append(line, '\n')); err != nil {
		return err
	}
	if b.flush != nil {
		return b.flushLocked()
	}
	return nil
}

func (b *breakingWriter) write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.w.Write(p)
	if err != nil {
		b.err = err
		b.cancel()
	}
	return n, err
}

// flusherOf returns w's Flush, when it has one, for the Writer to call
// after each line.
func flusherOf(w io.Writer) func() error {
	if f, ok := w.(interface{ Flush() error }); ok {
		return f.Flush
	}
	return nil
}
