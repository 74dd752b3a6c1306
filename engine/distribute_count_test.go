package engine

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/runnerd/lambda-runner/protocol"
)

// TestDistributeNodeShares: each batch's share of maxNodes, reserved as it
// is sent and given back in part at its end, lets through what fits in
// maxNodes in process, counts every item sent at least one, and is what the
// child may start.
func TestDistributeNodeShares(t *testing.T) {
	defer goleak.VerifyNone(t)
	dist := `"distribute":{"batchSize":2,"invocations":3},`
	run := func(t *testing.T, maxNodes int, wf string) (*recSink, protocol.Summary, *pipeFanOut) {
		t.Helper()
		parent, fo := fanEngines(func(l *Limits) { l.MaxNodes = maxNodes })
		s, sum := fanRun(t, nil, parent, `{"version":1,"workflow":`+wf+`}`)
		return s, sum, fo
	}
	inProcess := func(t *testing.T, maxNodes int, wf string) protocol.Summary {
		t.Helper()
		e, _ := wtEngine(func(l *Limits) { l.MaxNodes = maxNodes })
		_, sum := fanRun(t, nil, e, `{"version":1,"workflow":`+strings.Replace(wf, dist, "", 1)+`}`)
		return sum
	}
	for _, tc := range []struct{ name, inner string }{
		{"nodes known before they run", `{"id":"a","type":"set"},{"id":"b","type":"set","needs":["a"]},{"id":"c","type":"set","needs":["b"]}`},
		{"an inner map", `{"id":"in","type":"map","with":{"items":[1,2],"nodes":[{"id":"a","type":"set"}]}}`},
	} {
		t.Run("exactly maxNodes, "+tc.name, func(t *testing.T) {
			// the map and 20 items of 3 nodes: 61, in 10 batches, 3 at once
			wf := `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..20 }}",` + dist + `"nodes":[` + tc.inner + `]}}]}`
			if sum := inProcess(t, 61, wf); sum.Status != protocol.StatusCompleted || sum.Nodes != 61 {
				t.Fatalf("in process: %s after %d nodes", sum.Status, sum.Nodes)
			}
			s, sum, fo := run(t, 61, wf)
			if sum.Status != protocol.StatusCompleted || sum.Nodes != 61 {
				t.Errorf("distributed: %s after %d nodes, want completed after 61: %+v", sum.Status, sum.Nodes, s.terminal(t))
			}
			fo.mu.Lock()
			defer fo.mu.Unlock()
			for _, b := range fo.batches {
				if b.MaxNodes < int64(len(b.Items)) {
					t.Errorf("batch at %d: %d items, a share of %d", b.Start, len(b.Items), b.MaxNodes)
				}
			}
			if sum := inProcess(t, 60, wf); sum.Code != protocol.CodeLimitExceeded {
				t.Fatalf("in process, maxNodes 60: %s %s", sum.Status, sum.Code)
			}
			if _, sum, _ := run(t, 60, wf); sum.Code != protocol.CodeLimitExceeded || sum.Nodes > 60 {
				t.Errorf("distributed, maxNodes 60: %s %s after %d nodes", sum.Status, sum.Code, sum.Nodes)
			}
		})
	}
	t.Run("a sibling is not starved by the shares", func(t *testing.T) {
		// 1 + 4 and 1 + 20 nodes: 26 of 30, the map's batches all at once
		wf := `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..4 }}","distribute":{"invocations":4},"nodes":[{"id":"probe","type":"probe","with":{"sleepMs":20}}]}},
			{"id":"side","type":"map","with":{"items":"${{ 1..20 }}","nodes":[{"id":"a","type":"set"}]}}]}`
		s, sum, _ := run(t, 30, wf)
		if sum.Status != protocol.StatusCompleted || sum.Nodes != 26 {
			t.Errorf("%s after %d nodes, want completed after 26: %+v", sum.Status, sum.Nodes, s.terminal(t))
		}
	})
	t.Run("an item whose nodes are skipped counts one", func(t *testing.T) {
		wf := `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..10 }}",` + dist + `"nodes":[{"id":"a","type":"set","when":"false"}]}}]}`
		if _, sum, _ := run(t, 100, wf); sum.Status != protocol.StatusCompleted || sum.Nodes != 11 {
			t.Errorf("%s after %d nodes, want completed after 11 (the map and 10 items)", sum.Status, sum.Nodes)
		}
		s, sum, fo := run(t, 6, wf)
		f := s.failure(t)
		if sum.Code != protocol.CodeLimitExceeded || !strings.Contains(f.Error.Message, "maxNodes (6)") || sum.Nodes > 6 {
			t.Errorf("maxNodes 6: %s %s after %d nodes: %+v", sum.Status, sum.Code, sum.Nodes, f.Error)
		}
		if n := fo.calls.Load(); n > 3 { // 5 items left after the map: 2 batches of 2
			t.Errorf("maxNodes 6: %d invocations", n)
		}
	})
	t.Run("a child stops at its share", func(t *testing.T) {
		e, _ := wtEngine(nil)
		ev := fmt.Sprintf(`{"runnerFanOutBatch":{"v":1,"executionId":"x","node":"each","start":0,"items":[1],"concurrency":1,"maxNodes":3,"deadlineMs":%d,
		"request":{"version":1,"workflow":{"nodes":[{"id":"each","type":"map","with":{"items":[],"distribute":{"invocations":1},"nodes":[
		{"id":"in","type":"map","with":{"items":"${{ 1..5 }}","concurrency":1,"nodes":[{"id":"a","type":"set"}]}}]}}]}}}}`, farFuture())
		var sb strings.Builder
		if err := e.ServeBatch(t.Context(), []byte(ev), &sb); err != nil {
			t.Fatal(err)
		}
		out := sb.String()
		if n := strings.Count(out, `"type":"node.started"`); n != 3 {
			t.Errorf("%d nodes started, the share is 3", n)
		}
		if !strings.Contains(out, `"nodes":3`) || !strings.Contains(out, "LIMIT_EXCEEDED") || !strings.Contains(out, "execution ran more than maxNodes (10000) nodes: this batch of a distributed map may start 3 of them") {
			t.Errorf("stream:\n%s", out)
		}
		if err := e.ServeBatch(t.Context(), []byte(strings.Replace(ev, `"maxNodes":3`, `"maxNodes":0`, 1)), &sb); err == nil {
			t.Errorf("a batch without a share of maxNodes was run")
		}
	})
}

func farFuture() int64 { return 4102444800000 } // 2100-01-01
