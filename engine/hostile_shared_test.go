package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// sharedDAG is the let chain of the red team's F2, in expression text:
// a0 = [1, 1] and each a(i) = [a(i-1), a(i-1)], 2^(depth+1) leaves in a
// few hundred bytes.
func sharedDAG(depth int) string {
	var b strings.Builder
	b.WriteString("let a0 = [1, 1]; ")
	for i := 1; i <= depth; i++ {
		fmt.Fprintf(&b, "let a%d = [a%d, a%d]; ", i, i-1, i-1)
	}
	return b.String()
}

// TestHostileSharedReferences (F2): values of shared references leave an
// expression as a node's input (traced or not), its output, the
// workflow's output, or gathered by a template from references to one
// large value; each is measured as written out with a walk that stops at
// its bound, so that the run ends in-band, fast, its heap small. Before,
// a DAG of depth 40 never ended (the output's SizeOf), depth 26 traced took
// 26 s and 2 GB (json.Marshal of the node's input).
func TestHostileSharedReferences(t *testing.T) {
	within := costSlack(time.Second)
	one := func(value string) string {
		v, _ := json.Marshal(value)
		return `{"nodes":[{"id":"boom","type":"set","timeoutMs":1000,"with":{"value":` + string(v) + `}}]}`
	}
	many := make([]string, 2000)
	for i := range many {
		many[i] = `"${{ nodes.a.output }}"`
	}
	gathered := `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ input.s }}"}},
		{"id":"boom","type":"set","needs":["a"],"with":{"value":{"x":[` + strings.Join(many, ",") + `]}}}]}`
	tests := []struct {
		name     string
		workflow string
		trace    bool
		node     string // the node that fails, "" for the workflow's output
		code     protocol.Code
	}{
		{"depth 40", one("${{ " + sharedDAG(40) + "a40 }}"), false, "boom", protocol.CodeLimitExceeded},
		{"depth 40 traced", one("${{ " + sharedDAG(40) + "a40 }}"), true, "boom", protocol.CodeLimitExceeded},
		{"depth 26 traced", one("${{ " + sharedDAG(26) + "a26 }}"), true, "boom", protocol.CodeLimitExceeded},
		{"depth 62 in an object", one("${{ " + sharedDAG(62) + "{'v': a62} }}"), false, "boom", protocol.CodeLimitExceeded},
		{"depth 40 interpolated", one("x${{ " + sharedDAG(40) + "a40 }}"), false, "boom", protocol.CodeLimitExceeded},
		{"depth 40 toJSON", one("${{ " + sharedDAG(40) + "len(toJSON(a40)) }}"), false, "boom", protocol.CodeLimitExceeded},
		{"depth 24 flatten", one("${{ " + sharedDAG(24) + "len(flatten(a24)) }}"), false, "boom", protocol.CodeLimitExceeded},
		{"depth 25 ==", one("${{ " + sharedDAG(25) + "a25 == [a24, a24] }}"), false, "boom", protocol.CodeLimitExceeded},
		{"depth 25 median", one("${{ " + sharedDAG(25) + "median(a25) }}"), false, "boom", protocol.CodeLimitExceeded},
		// Under the value bound, over the output cap: measured up to the
		// cap only.
		{"depth 18 output", one("${{ " + sharedDAG(18) + "a18 }}"), false, "boom", protocol.CodeOutputTooLarge},
		{"depth 40 workflow output", `{"nodes":[{"id":"a","type":"set","with":{"value":1}}],"output":"${{ ` + sharedDAG(40) + `a40 }}"}`, false, "", protocol.CodeLimitExceeded},
		{"one output gathered 2,000 times", gathered, false, "boom", protocol.CodeLimitExceeded},
		{"one output gathered 2,000 times traced", gathered, true, "boom", protocol.CodeLimitExceeded},
	}
	input, _ := json.Marshal(map[string]any{"s": strings.Repeat("x", 1<<20)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := reqBody(tt.workflow, string(input))
			if tt.trace {
				body = strings.Replace(body, `{"version":1,`, `{"version":1,"trace":true,`, 1)
			}
			var s *recSink
			peak := heapPeak(func() { s, _ = exprRun(t, context.Background(), DefaultLimits(), body, within) })
			if peak > 96<<20 {
				t.Errorf("the heap peaked %d MiB above its start", peak>>20)
			}
			e := s.failure(t)
			if tt.node == "" {
				if !strings.Contains(e.Error.Message, string(tt.code)) {
					t.Fatalf("terminal error %q, want %s", e.Error.Message, tt.code)
				}
				return
			}
			f := s.nodeFailed(tt.node)
			if f == nil || f.Error.Code != tt.code {
				t.Fatalf("node.failed = %+v, want %s", f, tt.code)
			}
		})
	}
}

// TestSharedReferencesWithinBounds: a value that holds a small value more
// than once, or references one large value twice, is handed on as before.
func TestSharedReferencesWithinBounds(t *testing.T) {
	wf := `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ input.s }}"}},
		{"id":"b","type":"set","needs":["a"],"with":{"value":{"x":["${{ nodes.a.output }}","${{ nodes.a.output }}"]}}},
		{"id":"c","type":"set","with":{"value":"${{ let p = [1, 2]; [p, p, p] }}"}}]}`
	input, _ := json.Marshal(map[string]any{"s": strings.Repeat("x", 1<<20)})
	s, _ := exprRun(t, context.Background(), DefaultLimits(), reqBody(wf, string(input)), costSlack(time.Second))
	if r, ok := s.terminal(t).(*protocol.Result); !ok || r.Status != protocol.StatusCompleted {
		t.Fatalf("terminal = %s, want completed", describe(s.terminal(t)))
	}
}
