package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// Pins (SetPins) are for `runnerctl test` only: no member of a request
// sets them, wherever an author puts one.
func TestHostilePinsFromRequest(t *testing.T) {
	e := New(Limits{})
	for _, body := range []string{
		`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]},"pins":{"a":{"output":2}}}`,
		`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]},"mocks":{"nodes":{"a":{"output":2}}}}`,
		`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","pin":{"output":2},"with":{"value":1}}]}}`,
		`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}],"pins":{"a":2}}}`,
		`{"version":1,"runtime":{"pins":{"a":2}},"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`,
	} {
		x, err := e.PrepareBody([]byte(body))
		if err == nil {
			if x.pins != nil {
				t.Errorf("%s: pins set from the request", body)
			}
			x.discard()
			continue
		}
	}
}

// A pinned node is not run: its output, or its error, is as given, and
// its events name its own type.
func TestPins(t *testing.T) {
	e := New(Limits{})
	body := `{"version":1,"trace":true,"workflow":{"nodes":[
	  {"id":"a","type":"http","with":{"url":"https://unreachable.invalid/"}},
	  {"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output.n + 1 }}"}},
	  {"id":"c","type":"set","onError":"continue","with":{"value":1}}],
	  "output":{"b":"${{ nodes.b.output }}","c":"${{ nodes.c.error.code }}"}}}`
	x, err := e.PrepareBody([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := x.SetPins(map[string]Pin{"a": {Output: json.RawMessage(`{"n": 41}`)}, "c": {Error: &NodeError{Code: "NOPE", Message: "pinned"}}}); err != nil {
		t.Fatal(err)
	}
	if err := x.SetPins(map[string]Pin{"a": {Output: json.RawMessage(`{`)}}); err == nil || !strings.Contains(err.Error(), `node "a"`) {
		t.Errorf("a malformed pin: %v", err)
	}
	_ = x.SetPins(map[string]Pin{"a": {Output: json.RawMessage(`{"n": 41}`)}, "c": {Error: &NodeError{Code: "NOPE", Message: "pinned"}}})
	var w strings.Builder
	sink := protocol.NewWriter(&w, "x", nil)
	x.Run(context.Background(), sink)
	out := w.String()
	for _, want := range []string{`"nodeId":"a","nodeType":"http"`, `"output":{"b":42,"c":"NOPE"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("stream lacks %s:\n%s", want, out)
		}
	}
}
