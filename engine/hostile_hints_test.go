package engine

import (
	"fmt"
	"strings"
	"testing"
)

// A document of many mistakes, each a near miss of one of many names,
// had its "did you mean" searched for every one: a chain of 10,000 nodes
// each naming a node that is not upstream compared each name with every
// ancestor, 50 million comparisons (16 s of CPU before the 400). Now one
// request searches for at most maxHints suggestions, wherever they are
// asked for: a reference to a node, an input property, a need, a node
// type; later messages are the same without one.
func TestHostileSuggestions(t *testing.T) {
	const n = 3000
	nodes := func(node func(i int) string) string {
		var b strings.Builder
		b.WriteString(`{"nodes":[{"id":"n0","type":"set","with":{"value":0}}`)
		for i := 1; i < n; i++ {
			b.WriteString(",")
			b.WriteString(node(i))
		}
		b.WriteString(`]`)
		return b.String()
	}
	props := func() string {
		var b strings.Builder
		b.WriteString(`,"input":{"type":"object","additionalProperties":false,"properties":{`)
		for i := range 1000 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"prop%d":{"type":"string"}`, i)
		}
		b.WriteString(`}}}`)
		return b.String()
	}
	tests := []struct{ name, wf string }{
		{"references to nodes not upstream", nodes(func(i int) string {
			return fmt.Sprintf(`{"id":"n%d","type":"set","needs":["n%d"],"with":{"value":"${{ nodes.n%dx.output }}"}}`, i, i-1, i-1)
		}) + `}`},
		{"needs of unknown nodes", nodes(func(i int) string {
			return fmt.Sprintf(`{"id":"n%d","type":"set","needs":["n%dx"],"with":{"value":1}}`, i, i-1)
		}) + `}`},
		{"input properties not in the schema", nodes(func(i int) string {
			return fmt.Sprintf(`{"id":"n%d","type":"set","with":{"value":"${{ input.prop%dx }}"}}`, i, i%1000)
		}) + props()},
		{"unknown node types", nodes(func(i int) string {
			return fmt.Sprintf(`{"id":"n%d","type":"sett","with":{"value":1}}`, i)
		}) + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := prepareInvalid(t, newTestEngine(nil), reqBody(tt.wf, ""))
			if len(inv.Details) < n/2 {
				t.Fatalf("%d details, want one a node", len(inv.Details))
			}
			hinted := 0
			for _, d := range inv.Details {
				if strings.Contains(d.Message, "did you mean") {
					hinted++
				}
			}
			// The first ones still get theirs.
			if hinted != maxHintsForTest || !strings.Contains(inv.Details[0].Message, "did you mean") {
				t.Errorf("%d messages with a suggestion, want the first %d; first: %s", hinted, maxHintsForTest, inv.Details[0].Message)
			}
		})
	}
}

// maxHintsForTest is lang's maxHints.
const maxHintsForTest = 16
