package engine

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Only set and fail nodes whose evaluation cannot run long (and that do not
// retry) run on the scheduler.
func TestInlineNodes(t *testing.T) {
	e := newTestEngine(nil)
	for _, tt := range []struct {
		name, node string
		inline     bool
	}{
		{"literal", `{"id":"b","type":"set","needs":["a"],"with":{"value":1}}`, true},
		{"plain reference", `{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output.k }}"}}`, true},
		{"arithmetic", `{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output.n + 1 }}"}}`, true},
		{"interpolation", `{"id":"b","type":"set","needs":["a"],"with":{"value":"n=${{ nodes.a.output.n }}"}}`, true},
		{"fail", `{"id":"b","type":"fail","needs":["a"],"onError":"continue","with":{"message":"${{ nodes.a.output.k }}"}}`, true},
		{"predicate", `{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ filter(nodes.a.output.list, # > 0) }}"}}`, false},
		{"in", `{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ 1 in nodes.a.output.list }}"}}`, false},
		{"equality of values", `{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output == input }}"}}`, false},
		{"concatenation", `{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output.k + 'x' }}"}}`, false},
		{"builtin", `{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ upper(nodes.a.output.k) }}"}}`, false},
		{"retry", `{"id":"b","type":"set","needs":["a"],"retry":{"maxAttempts":2},"with":{"value":1}}`, false},
		{"map", `{"id":"b","type":"map","needs":["a"],"with":{"items":"${{ nodes.a.output.list }}","nodes":[{"id":"x","type":"set","with":{"value":"${{ item }}"}}]}}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := prepareReq(t, e, reqBody(`{"nodes":[{"id":"a","type":"set","with":{"value":{"k":"v","n":1,"list":[1]}}},`+tt.node+`]}`, ""))
			if got := x.g.nodes[1].inline; got != tt.inline {
				t.Errorf("inline = %t, want %t", got, tt.inline)
			}
			s := &recSink{}
			sum := x.Run(context.Background(), s)
			if sum.Status == "" {
				t.Errorf("no summary")
			}
		})
	}
}

// A long chain of inline nodes still stops when the execution's context
// ends: the scheduler looks at it between nodes.
func TestInlineChainStopsOnCancel(t *testing.T) {
	nodes := []string{`{"id":"n0","type":"set","with":{"value":0}}`}
	for i := 1; i < 5000; i++ {
		nodes = append(nodes, `{"id":"n`+strconv.Itoa(i)+`","type":"set","needs":["n`+strconv.Itoa(i-1)+`"],"with":{"value":"${{ nodes.n`+strconv.Itoa(i-1)+`.output + 1 }}"}}`)
	}
	l := DefaultLimits()
	l.MaxNodes = 10000
	e := New(l)
	x := prepareReq(t, e, reqBody(`{"nodes":[`+strings.Join(nodes, ",")+`]}`, ""))
	ctx, cancel := context.WithCancel(context.Background())
	s := &cancelAfterSink{n: 100, cancel: cancel}
	done := make(chan protocol.Summary)
	go func() { done <- x.Run(ctx, s) }()
	select {
	case sum := <-done:
		if sum.Status != protocol.StatusFailed || sum.Nodes >= 5000 {
			t.Errorf("ended %s after %d nodes, want failed (cancelled) early", sum.Status, sum.Nodes)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not stop within 20s of its cancellation")
	}
}

// cancelAfterSink cancels the run after n events.
type cancelAfterSink struct {
	recSink
	n      int
	cancel context.CancelFunc
}

func (s *cancelAfterSink) Emit(ev protocol.Event) error {
	if s.n--; s.n == 0 {
		s.cancel()
	}
	return s.recSink.Emit(ev)
}
