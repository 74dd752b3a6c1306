package engine

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestPlanCacheKeepsNoBody: a kept plan holds its document, not the
// request body it came in. A request's members are slices of its body,
// so a plan (or an entry of the engine's other caches: schemas,
// expressions) that pointed into them would keep every body's input
// alive beyond what the caches count: small documents with large inputs.
func TestPlanCacheKeepsNoBody(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector changes what the heap holds")
	}
	for _, tt := range []struct{ name, doc string }{
		{"set", `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ input.s + '%d' }}"}}],"output":"${{ nodes.a.output }}"}`},
		{"input schema", `{"input":{"type":"object","properties":{"s":{"type":"string","description":"%d"}}},"nodes":[{"id":"a","type":"set","needs":[],"with":{"value":"${{ input.s }}"}}],"output":{"v":"${{ nodes.a.output }}"}}`},
		{"map", `{"nodes":[{"id":"m","type":"map","with":{"items":"${{ [input.s] }}","nodes":[{"id":"x","type":"set","with":{"value":"${{ item + '%d' }}"}}]}}]}`},
		{"when and fail", `{"id":"w%d","nodes":[{"id":"a","type":"set","with":{"value":{"k":["${{ input.s }}",1,true,null]}}},{"id":"b","type":"fail","needs":["a"],"when":"${{ len(nodes.a.output.k) > 9 }}","with":{"message":"no ${{ input.s }}"}}]}`},
		{"closed input", `{"input":{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string","minLength":%d,"maxLength":3000000}}},"nodes":[{"id":"a","type":"set","with":{"value":"${{ input.s ?? 'none' }}"}}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := New(DefaultLimits())
			input := `{"s":"` + strings.Repeat("x", 2<<20) + `"}`
			before := liveHeap()
			for i := range 8 {
				body := []byte(reqBody(fmt.Sprintf(tt.doc, i), input))
				for range 2 { // kept on the second sighting
					if got := prepareOutcome(t, e, body, false); got.err != "" {
						t.Fatal(got.err)
					}
				}
			}
			held := int64(liveHeap()) - int64(before)
			used, n := e.plans.Bytes()
			if n != 8 {
				t.Fatalf("%d plans kept, want 8", n)
			}
			t.Logf("8 plans, counted %d bytes, the heap grew by %d", used, held)
			if held > used+1<<20 {
				t.Errorf("the heap grew by %d bytes for plans counted at %d: a plan keeps its request's body", held, used)
			}
			runtime.KeepAlive(e)
		})
	}
}
