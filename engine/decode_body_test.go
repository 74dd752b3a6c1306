package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/protocol"
)

// The one pass's hook leaves nesting over the body's cap to the ordinary
// read, which names it.
func TestDecodeHookDepth(t *testing.T) {
	deep := `{"nodes":[{"id":"a","type":"set","with":{"value":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}}]}`
	if _, err := document.Decoder(128, 0)([]byte(deep)); err == nil {
		t.Fatal("the hook read a document nested past its cap")
	}
	e, _ := wtEngine(nil)
	d := bodyInvalid(t, e, deep)
	if len(d) != 1 || !strings.HasPrefix(d[0].Path, "workflow.nodes[0].with.value[0][0]") || !strings.Contains(d[0].Message, "nested deeper than maxDepth") {
		t.Fatalf("details %s", wtJSON(d))
	}
}

// Hostile documents through the typed decode: what the author makes it
// spend is bounded by the text, and each ends in a precise detail.
func TestHostileDecodeTyped(t *testing.T) {
	many := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f(i))
		}
		return b.String()
	}
	tests := []struct {
		name, wf, path, fragment string
	}{
		{"duplicate keys in with", `{"nodes":[{"id":"a","type":"set","with":{"value":1,"value":2}}]}`, "workflow.nodes[0].with.value", `duplicate key "value"`},
		{"duplicate typed member", `{"nodes":[{"id":"a","id":"b","type":"set"}]}`, "workflow.nodes[0].id", `duplicate key "id"`},
		{"100k unknown node members", `{"nodes":[{"id":"a","type":"set",` + many(100_000, func(i int) string { return fmt.Sprintf(`"k%d":0`, i) }) + `}]}`, "workflow.nodes[0]", "additional properties"},
		{"100k with members", `{"nodes":[{"id":"a","type":"set","with":{` + many(100_000, func(i int) string { return fmt.Sprintf(`"k%d":0`, i) }) + `}}]}`, "workflow.nodes[0].with", "additional properties"},
		{"100k needs", `{"nodes":[{"id":"a","type":"set","needs":[` + many(100_000, func(int) string { return `"a"` }) + `]}]}`, "workflow.nodes[0].needs", "items at 0 and 1 are equal"},
		{"huge exponent in with", `{"nodes":[{"id":"a","type":"set","with":{"value":1e999999}}]}`, "workflow.nodes[0].with", "1e999999 is out of range"},
		{"NaN-ish text", `{"nodes":[{"id":"a","type":"set","timeoutMs":"NaN","with":{"value":"Infinity"}}]}`, "workflow.nodes[0].timeoutMs", "got string, want integer"},
		{"giant id", `{"nodes":[{"id":"` + strings.Repeat("x", 1<<20) + `!","type":"set"}]}`, "workflow.nodes[0].id", "does not match pattern"},
		{"nesting at the cap in with", `{"nodes":[{"id":"a","type":"set","with":{"value":` + strings.Repeat("[", 110) + strings.Repeat("]", 110) + `},"x":1}]}`, "workflow.nodes[0]", "additional properties 'x'"},
		{"escaped member names", `{"nodes":[{"\u0069d":"a","typ\u0065":"set","w\u0069th":{"valu\u0065":1},"\u00e9":1}]}`, "workflow.nodes[0]", "additional properties 'é'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(nil)
			start := time.Now()
			d := bodyInvalid(t, e, tt.wf)
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("checking took %v, want under 5s", el)
			}
			if !wtHasDetail(d, tt.path, tt.fragment) {
				t.Errorf("details %.2000s, want one at %s saying %q", wtJSON(d), tt.path, tt.fragment)
			}
		})
	}
}

// bodyInvalid prepares a request body holding wf, read in one pass as the
// handler reads it, that must be refused, and returns the problems.
func bodyInvalid(t *testing.T, e *Engine, wf string) []protocol.Detail {
	t.Helper()
	x, err := e.PrepareBody([]byte(`{"version":1,"workflow":` + wf + `,"input":{}}`))
	if err == nil {
		x.discard()
		t.Fatal("PrepareBody accepted the request, want INVALID_EXECUTION")
	}
	var inv *protocol.Invalid
	if !errors.As(err, &inv) {
		t.Fatalf("PrepareBody error %T %v, want *protocol.Invalid", err, err)
	}
	return inv.Details
}
