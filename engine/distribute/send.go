package distribute

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/engine/jsonweight"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// send runs one batch in a child invocation and forwards its events. It
// returns the batch's outputs, or the failure that ends the map.
func (p *Parent) send(ctx context.Context, b *Batches, doc *batch.Doc, share *secrets.Share, items Items, count *nodeCount) ([]any, error) {
	defer p.Redact.Release(share)
	last := doc.Start + len(items.Items) - 1
	what := fmt.Sprintf("batch of items %d to %d", doc.Start, last)
	event, release, err := p.Exec.Event(ctx, what, doc, items)
	if err != nil {
		return nil, err
	}
	// The event is sent once Invoke returns (it retries a throttled
	// invocation inside).
	rc, err := b.FanOut.Invoke(ctx, event)
	release()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errorf(protocol.CodeInvocationFailed, "%s: child invocation failed: %s", what, p.Redact.String(err.Error()))
	}
	defer rc.Close()
	end, held, err := p.forward(ctx, b.Prefix, rc, count, share)
	defer func() { p.Budget.Add(-held) }()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if coded(err) {
			return nil, err
		}
		return nil, errorf(protocol.CodeInvocationFailed, "%s: child invocation ended without its result: %s", what, p.Redact.String(err.Error()))
	}
	count.ended, count.reported = true, end.Nodes
	if end.Learned != nil {
		if err := p.Redact.Absorb(*end.Learned, share); err != nil {
			return nil, err
		}
	}
	if err := p.Exec.Ended(end); err != nil {
		return nil, err
	}
	if len(end.Outputs) != len(items.Items) {
		return nil, errorf(protocol.CodeInvocationFailed, "%s: the child returned %d outputs for %d items", what, len(end.Outputs), len(items.Items))
	}
	return p.outputs(what, doc.Start, end.Outputs)
}

// outputs decodes a batch's outputs. The iterations' outputs were held in
// the child; here they are held again until the map ends, as an in-process
// map holds them. Each is weighed before it is decoded (JSON can decode to
// many times its bytes), while the stream's bytes are still charged.
func (p *Parent) outputs(what string, start int, raw []json.RawMessage) ([]any, error) {
	vals := make([]any, len(raw))
	var size int64
	over := func() ([]any, error) {
		p.Budget.Add(-size)
		return nil, errorf(protocol.CodeMemoryBudgetExceeded, "%s: its outputs would put node outputs over the execution's memory budget of %d bytes", what, p.MemoryBudget)
	}
	for i, o := range raw {
		w := jsonweight.Of(o)
		size += w
		if p.Budget.Add(w) > p.MemoryBudget {
			return over()
		}
		var v any
		if err := json.Unmarshal(o, &v); err != nil {
			p.Budget.Add(-size)
			return nil, errorf(protocol.CodeInvocationFailed, "%s: output %d is not JSON", what, start+i)
		}
		raw[i] = nil
		vals[i] = v
		if d := lang.SizeWithin(v, p.MemoryBudget+1) - w; d != 0 {
			size += d
			if p.Budget.Add(d) > p.MemoryBudget {
				return over()
			}
		}
	}
	return vals, nil
}
