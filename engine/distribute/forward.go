package distribute

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

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
func (p *Parent) forward(ctx context.Context, prefix string, rc io.Reader, count *nodeCount, share *secrets.Share) (*batch.End, int64, error) {
	br := bufio.NewReaderSize(rc, 64<<10)
	// A line carries one event (bounded by maxEventBytes in the child) or
	// the end with the batch's outputs (bounded by the memory budget).
	limit := p.MemoryBudget + int64(p.MaxEventBytes) + 64<<10
	var line []byte
	var held int64 // charged to p.Budget: the line's buffer, then the end's copies
	charge := func(n int64) error {
		held += n
		if p.Budget.Add(n) > p.MemoryBudget {
			return errorf(protocol.CodeMemoryBudgetExceeded, "the stream of a child invocation would put node outputs over the execution's memory budget of %d bytes", p.MemoryBudget)
		}
		return nil
	}
	fail := func(err error) (*batch.End, int64, error) {
		p.Budget.Add(-held)
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
		end, err := p.forwardLine(prefix, line, count, share)
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
func (p *Parent) forwardLine(prefix string, line []byte, count *nodeCount, share *secrets.Share) (*batch.End, error) {
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
		return nil, p.learn(line, share)
	case protocol.TypeNodeStarted, protocol.TypeNodeCompleted, protocol.TypeNodeFailed,
		protocol.TypeNodeSuspended, protocol.TypePermissionDecision:
		ev = protocol.NewEvent(head.Type)
	default:
		return nil, fmt.Errorf("the child's stream has an event of type %q", head.Type)
	}
	if err := json.Unmarshal(line, ev); err != nil {
		return nil, fmt.Errorf("a %s event of the child: %w", head.Type, err)
	}
	red := p.Redact
	var id string
	switch e := ev.(type) {
	case *protocol.NodeStarted:
		id, e.Input = e.NodeID, p.reredact(e.Input)
		if e.Role != nil {
			e.Role.Requested = red.String(e.Role.Requested)
		}
		// The batch's allowance is already in p.Nodes: a child that
		// starts more than it is stopped here.
		if e.Attempt == 1 {
			if count.started++; count.started > count.allowance {
				return nil, errorf(protocol.CodeLimitExceeded, "execution ran more than maxNodes (%d) nodes: a batch of a distributed map started more than its share (%d)", p.MaxNodes, count.allowance)
			}
		}
	case *protocol.NodeCompleted:
		id, e.Output = e.NodeID, p.reredact(e.Output)
	case *protocol.NodeFailed:
		id, e.Error.Message = e.NodeID, red.String(e.Error.Message)
		if !e.Retrying {
			p.Exec.NodeFailed(e.NodeType, string(e.Error.Code))
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
	_ = p.Sink.Emit(ev)
	return nil, nil
}

// learn learns what a child's private line reports. Its text is never
// shown: an error names the line, not what it holds.
func (p *Parent) learn(line []byte, sh *secrets.Share) error {
	l, err := batch.DecodeLearned(line)
	if err != nil {
		return errorf(protocol.CodeInvocationFailed, "the child's stream has a %s line that cannot be read", batch.LearnedType)
	}
	return p.Redact.Absorb(l, sh)
}

// reredact passes a child's traced value through the parent's redactor.
func (p *Parent) reredact(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b
	}
	out := p.Redact.Bytes(b)
	if !json.Valid(out) {
		m, _ := json.Marshal(redact.Marker)
		return m
	}
	return out
}
