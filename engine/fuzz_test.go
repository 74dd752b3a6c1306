package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// FuzzPrepare checks workflow validation on any document and input: Prepare
// never panics; it refuses with a *protocol.Invalid holding at least one
// detail at a path of the request, or it returns an Execution that runs to
// exactly one terminal event.
//
// The seed corpus runs with plain go test; go test -fuzz=FuzzPrepare
// ./engine/ explores further.
func FuzzPrepare(f *testing.F) {
	seeds := []struct{ workflow, input string }{
		{`{"id":"hello","version":1,"input":{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}},
			"nodes":[{"id":"greet","type":"set","with":{"value":"Hello, ${{ input.name }}!"}},
			{"id":"shout","type":"set","needs":["greet"],"with":{"value":"${{ upper(nodes.greet.output) }}"}}],
			"output":{"greeting":"${{ nodes.shout.output }}"}}`, `{"name":"Ada"}`},
		{`{"nodes":[{"id":"a","type":"set","with":{"value":1}},{"id":"b","type":"set","needs":["a"]},
			{"id":"c","type":"set","needs":["a"],"when":"nodes.a.output > 0"},{"id":"d","type":"set","needs":["b","c"]}]}`, ``},
		{`{"nodes":[{"id":"a","type":"set","needs":["b"]},{"id":"b","type":"set","needs":["a"]}]}`, ``},
		{`{"nodes":[{"id":"a","type":"set"},{"id":"a","type":"set","needs":["ghost","a"]}]}`, ``},
		{`{"nodes":[{"id":"m","type":"map","with":{"items":"${{ input }}","concurrency":2,
			"nodes":[{"id":"x","type":"set","with":{"value":"${{ item * index }}"}}],"output":"${{ nodes.x.output }}"}}]}`, `[1,2,3]`},
		{`{"nodes":[{"id":"boom","type":"fail","onError":"continue","retry":{"maxAttempts":2,"backoffMs":1},
			"with":{"code":"X","message":"m"}},{"id":"after","type":"set","needs":["boom"],"when":"nodes.boom.status == 'failed'"}]}`, ``},
		{`{"nodes":[{"id":"a","type":"set","with":{"value":"${{ foo }} $${{ bar }} ${{ 1 + }}"}}],"output":"${{ nodes.zz }}"}`, ``},
		{`{"nodes":[{"id":"w","type":"wait"},{"id":"v","type":"value.get"},{"id":"c","type":"workflow","with":{"workflow":"child"}}]}`, ``},
		{`{"input":{"type":5},"nodes":[{"id":"a","type":"set","timeoutMs":1,"with":{"value":"${{ input.x.y }}"}}]}`, `{"x":null}`},
		{`{"nodes":[{"id":"1","type":""}],"extra":true}`, `[`},
		{`[]`, `null`},
		{`{"nodes":[`, ``},
	}
	for _, s := range seeds {
		f.Add([]byte(s.workflow), []byte(s.input))
	}
	e := New(DefaultLimits())
	e.Limits.MaxNodes = 1000
	e.Limits.MaxMapItems = 100
	e.Limits.Reserve = 10 * time.Millisecond
	f.Fuzz(func(t *testing.T, workflow, input []byte) {
		req := &protocol.ExecutionRequest{Version: protocol.Version, Workflow: workflow}
		if len(input) > 0 {
			req.Input = input
		}
		x, err := e.Prepare(req)
		if err != nil {
			if x != nil {
				t.Fatalf("Prepare returned both an execution and %v", err)
			}
			var inv *protocol.Invalid
			if !errors.As(err, &inv) {
				t.Fatalf("error is %T (%v), want *protocol.Invalid", err, err)
			}
			if len(inv.Details) == 0 {
				t.Fatal("*protocol.Invalid without details")
			}
			for _, d := range inv.Details {
				if !strings.HasPrefix(d.Path, "workflow") && !strings.HasPrefix(d.Path, "input") {
					t.Errorf("detail %+v is not at a path of the workflow or the input", d)
				}
				if d.Message == "" {
					t.Errorf("detail at %q without a message", d.Path)
				}
			}
			return
		}
		if x == nil {
			t.Fatal("Prepare returned neither an execution nor an error")
		}
		// Whatever was accepted runs to one terminal event; a second is
		// given to finish what a retry or a timeout would stretch.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s := &recSink{}
		x.Run(ctx, s)
		s.terminal(t)
	})
}
