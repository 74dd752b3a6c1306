package engine

import (
	"context"
	"sort"
	"sync"

	"github.com/runnerd/lambda-runner/protocol"
)

// Observer is told when executions and node attempts begin and end, for
// tracing. Each Start returns the context the work runs in (one that
// carries a span, so that outbound calls made under it propagate it) and a
// function the engine calls once when the work ends. Observers see ids,
// node types, attempts, statuses and codes, never a value.
//
// Engine.Observer is nil unless tracing is on, and a nil Observer costs
// one comparison per attempt.
type Observer interface {
	StartExecution(ctx context.Context, executionID string) (context.Context, func(protocol.Summary))
	StartAttempt(ctx context.Context, nodeID, nodeType string, attempt int) (context.Context, func(status, code string))
}

// failureCounts counts final node failures by type and code. Failures are
// rare, so a mutex is cheaper than anything clever.
type failureCounts struct {
	mu sync.Mutex
	m  map[[2]string]int64
}

func (c *failureCounts) add(nodeType, code string) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[[2]string]int64{}
	}
	c.m[[2]string{nodeType, code}]++
	c.mu.Unlock()
}

// list returns the counts sorted by type and code, nil when there are none.
func (c *failureCounts) list() []protocol.NodeFailures {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) == 0 {
		return nil
	}
	out := make([]protocol.NodeFailures, 0, len(c.m))
	for k, n := range c.m {
		out = append(out, protocol.NodeFailures{NodeType: k[0], Code: protocol.Code(k[1]), Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].NodeType != out[j].NodeType {
			return out[i].NodeType < out[j].NodeType
		}
		return out[i].Code < out[j].Code
	})
	return out
}
