package distribute

import (
	"sync/atomic"
	"testing"

	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// recSink records the events emitted.
type recSink struct{ events []protocol.Event }

func (s *recSink) Emit(ev protocol.Event) error {
	s.events = append(s.events, ev)
	return nil
}

// TestForwardRefusesForeignLines: a child's stream can only carry events
// of the map's own iterations, and no terminal event.
func TestForwardRefusesForeignLines(t *testing.T) {
	sink := &recSink{}
	p := &Parent{Sink: sink, Redact: secrets.New(nil), Nodes: &atomic.Int64{}, Budget: &atomic.Int64{}, MaxNodes: 10_000, MemoryBudget: 1 << 20}
	for _, line := range []string{
		`{"type":"node.started","nodeId":"other","nodeType":"set","attempt":1}`,
		`{"type":"result","status":"completed"}`,
		`{"type":"error","error":{}}`,
		`{"type":"accepted"}`,
		`not json`,
	} {
		if _, err := p.forwardLine("each[", []byte(line), &nodeCount{allowance: 10}, nil); err == nil {
			t.Errorf("%s: forwarded", line)
		}
	}
	if n := len(sink.events); n != 0 {
		t.Errorf("%d events emitted", n)
	}
}
