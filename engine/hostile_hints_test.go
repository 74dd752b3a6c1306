package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/engine/document"
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
			// Listed or, past protocol.MaxDetails, counted.
			if len(inv.Details)+inv.More() < n/2 {
				t.Fatalf("%d details and %d more, want one a node", len(inv.Details), inv.More())
			}
			hinted := suggested(inv)
			// The first ones still get theirs.
			if hinted != maxHintsForTest || !strings.Contains(inv.Details[0].Message, "did you mean") {
				t.Errorf("%d messages with a suggestion, want the first %d; first: %s", hinted, maxHintsForTest, inv.Details[0].Message)
			}
		})
	}
}

// maxHintsForTest is lang's maxHints.
const maxHintsForTest = 16

// Every node naming a toolset, model role or child workflow the request
// does not hold had its message list every one the request does: 2,000
// nodes naming a toolset missing from 2,000 made a 48 MB response (4 s, a
// 290 MB heap) to a 253 KB request. Now a message lists at most
// document.MaxListed names and how many more, sorted once a request.
func TestHostileNameLists(t *testing.T) {
	const n = 2000
	many := func(item func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = item(i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	nodes := func(node func(i int) string) string { return `{"nodes":` + many(node) + `}` }
	tests := []struct{ name, body, first string }{
		{"toolsets of tool nodes", fmt.Sprintf(`{"version":1,"workflow":%s,"runtime":{"toolsets":%s}}`,
			nodes(func(i int) string {
				return fmt.Sprintf(`{"id":"n%d","type":"tool","with":{"toolset":"t0000x","tool":"x"}}`, i)
			}),
			many(func(i int) string { return fmt.Sprintf(`{"name":"t%04d","url":"https://mcp.example/%d"}`, i, i) })),
			`unknown toolset "t0000x": not in runtime.toolsets (did you mean "t0000"?) (it has "t0000", "t0001"`},
		{"toolsets of agent nodes", fmt.Sprintf(`{"version":1,"workflow":%s,"runtime":{"toolsets":%s,"models":[{"role":"general","provider":"openai","model":"m","apiKey":"k"}]}}`,
			nodes(func(i int) string {
				return fmt.Sprintf(`{"id":"n%d","type":"agent","with":{"prompt":"p","toolsets":["nope"]}}`, i)
			}),
			many(func(i int) string { return fmt.Sprintf(`{"name":"t%04d","url":"https://mcp.example/%d"}`, i, i) })),
			`unknown toolset "nope": not in runtime.toolsets (it has "t0000", "t0001"`},
		{"model roles", fmt.Sprintf(`{"version":1,"workflow":%s,"runtime":{"models":%s}}`,
			nodes(func(i int) string {
				return fmt.Sprintf(`{"id":"n%d","type":"model","with":{"role":"nope","prompt":"p"}}`, i)
			}),
			many(func(i int) string {
				return fmt.Sprintf(`{"role":"r%04d","provider":"openai","model":"m","apiKey":"k"}`, i)
			})),
			`(it has "r0000", "r0001"`},
		{"child workflows", fmt.Sprintf(`{"version":1,"workflow":%s,"runtime":{"workflows":%s}}`,
			nodes(func(i int) string { return fmt.Sprintf(`{"id":"n%d","type":"workflow","with":{"workflow":"nope"}}`, i) }),
			many(func(i int) string { return fmt.Sprintf(`{"id":"w%04d","nodes":[{"id":"a","type":"set"}]}`, i) })),
			`unknown child workflow "nope": not in runtime.workflows (it has "w0000", "w0001"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := prepareInvalid(t, newTestEngine(nil), tt.body)
			if len(inv.Details)+inv.More() < n {
				t.Fatalf("%d details and %d more, want one a node: %+v", len(inv.Details), inv.More(), inv.Details[:min(3, len(inv.Details))])
			}
			if d := inv.Details[0]; !strings.Contains(d.Message, tt.first) || !strings.Contains(d.Message, fmt.Sprintf(", and %d more)", n-document.MaxListed)) {
				t.Errorf("first message %q\nwant it to hold %q and the count of the rest", d.Message, tt.first)
			}
			for _, d := range inv.Details {
				if len(d.Message) > 400 {
					t.Fatalf("a message of %d bytes: %.200s…", len(d.Message), d.Message)
				}
			}
		})
	}
}
