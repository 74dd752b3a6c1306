package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Issue 18, class 10: preparation in proportion to the body. A 6 MB body
// of expressions of any shape — distinct texts that need expr's compiler,
// quick references, one text repeated, spread over keys or nodes — is
// accepted or refused quickly, the heap never far above where it was.
func TestHostileExpressionPreparation(t *testing.T) {
	const size = 6 << 20
	oneString := func(piece func(i int) string) string {
		var b strings.Builder
		b.WriteString(`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","when":"false","with":{"value":"`)
		for i := 0; b.Len() < size; i++ {
			b.WriteString(piece(i))
		}
		b.WriteString(`"}}]}}`)
		return b.String()
	}
	// Objects of many keys cost their decoding (generic maps) more than
	// their expressions: 2 MB of them.
	manyKeys := func(piece func(i int) string) string {
		var b strings.Builder
		b.WriteString(`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":{`)
		for i := 0; b.Len() < size/3; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":"%s"`, i, piece(i))
		}
		b.WriteString(`}}}]}}`)
		return b.String()
	}
	manyNodes := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"version":1,"workflow":{"nodes":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"n%d","type":"set","when":"%d..1 != nil","with":{"value":{"a":"${{ %d..2 }}","b":"${{ input.x%d }}"}}}`, i, i, i, i)
		}
		b.WriteString(`]}}`)
		return b.String()
	}
	tests := []struct {
		name   string
		body   string
		refuse bool
	}{
		{"457k distinct ranges in a node that never runs", oneString(func(i int) string { return fmt.Sprintf("${{ %d..1 }}", i) }), true},
		{"distinct quick references", oneString(func(i int) string { return fmt.Sprintf("${{ input.a%d }}", i) }), true},
		{"one text repeated", oneString(func(int) string { return "${{ input.a }}" }), true},
		{"one full text repeated", oneString(func(int) string { return "${{ 1..1 }}" }), true},
		{"distinct ranges under keys", manyKeys(func(i int) string { return fmt.Sprintf("${{ %d..1 }}", i) }), true},
		{"distinct whens and templates over nodes", manyNodes(9_000), true},
		{"escaped pieces, no expression", oneString(func(int) string { return "$${{ 1..1 }}" }), false},
		{"a node of 20,000 quick pieces in 6 MB of text", oneString(func(i int) string {
			if i >= 19_999 {
				return strings.Repeat("x", 1000)
			}
			return fmt.Sprintf("${{ input.a%d }}", i)
		}), false},
		{"20,000 distinct full expressions", oneString(func(i int) string {
			if i >= 19_999 {
				return strings.Repeat("x", 1000)
			}
			return fmt.Sprintf("${{ %d..1 }}", i)
		}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(DefaultLimits())
			var err error
			var took time.Duration
			peak := heapPeak(func() {
				start := time.Now()
				var x *Execution
				x, err = e.PrepareBody([]byte(tt.body))
				took = time.Since(start)
				x.discard()
			})
			t.Logf("%d bytes: %v, heap peak +%d MiB", len(tt.body), took, peak>>20)
			// Well under a second of CPU; the machine running the tests
			// is shared.
			if took > costSlack(3*time.Second) {
				t.Errorf("prepared in %v", took)
			}
			if peak > 160<<20 {
				t.Errorf("the heap peaked %d MiB above its start", peak>>20)
			}
			var inv *protocol.Invalid
			switch {
			case !tt.refuse && err != nil:
				t.Fatalf("refused: %.300s", err.Error())
			case tt.refuse && !errors.As(err, &inv):
				t.Fatalf("got %v, want a 400", err != nil)
			case tt.refuse:
				found := false
				for _, d := range inv.Details {
					found = found || strings.Contains(d.Message, "maxExpressions (20000)")
				}
				if !found {
					t.Errorf("no detail names maxExpressions: %.500v", inv.Error())
				}
			}
		})
	}
}
