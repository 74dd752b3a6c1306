package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// TestDocNearMisses: a misspelt member of the document is refused with the
// validator's message and a "did you mean" naming the member it stands
// for, at every depth; a name near no member gets no suggestion.
func TestDocNearMisses(t *testing.T) {
	tests := []struct {
		name, wf  string
		path, msg string
	}{
		{"node member", `{"nodes":[{"id":"a","type":"set","wiht":{"value":1}}]}`,
			"workflow.nodes[0]", `additional properties 'wiht' not allowed (did you mean "with"?)`},
		{"retry", `{"nodes":[{"id":"a","type":"set","retyr":{"maxAttempts":2}}]}`,
			"workflow.nodes[0]", `additional properties 'retyr' not allowed (did you mean "retry"?)`},
		{"two at once", `{"nodes":[{"id":"a","type":"set","retyr":{},"wiht":{}}]}`,
			"workflow.nodes[0]", `additional properties 'retyr', 'wiht' not allowed (did you mean "retry" for "retyr", "with" for "wiht"?)`},
		{"one near, one not", `{"nodes":[{"id":"a","type":"set","zzzzzz":1,"wiht":{}}]}`,
			"workflow.nodes[0]", `additional properties 'wiht', 'zzzzzz' not allowed (did you mean "with" for "wiht"?)`},
		{"with of set", `{"nodes":[{"id":"a","type":"set","with":{"valeu":1}}]}`,
			"workflow.nodes[0].with", `additional properties 'valeu' not allowed (did you mean "value"?)`},
		{"with of http", `{"nodes":[{"id":"a","type":"http","with":{"url":"https://x.example","heders":{}}}]}`,
			"workflow.nodes[0].with", `additional properties 'heders' not allowed (did you mean "headers"?)`},
		{"retry member", `{"nodes":[{"id":"a","type":"set","retry":{"maxAttempt":2}}]}`,
			"workflow.nodes[0].retry", `additional properties 'maxAttempt' not allowed (did you mean "maxAttempts"?)`},
		{"inside a map", `{"nodes":[{"id":"m","type":"map","with":{"items":[1],"nodes":[{"id":"b","type":"set","wen":"true"}]}}]}`,
			"workflow.nodes[0].with.nodes[0]", `additional properties 'wen' not allowed (did you mean "when"?)`},
		{"document member", `{"nodes":[{"id":"a","type":"set"}],"ouptut":1}`,
			"workflow", `additional properties 'ouptut' not allowed (did you mean "output"?)`},
		{"a member of another node type is no suggestion", `{"nodes":[{"id":"a","type":"set","with":{"url":"x"}}]}`,
			"workflow.nodes[0].with", `additional properties 'url' not allowed`},
		{"far from every member", `{"nodes":[{"id":"a","type":"set","colour":1}]}`,
			"workflow.nodes[0]", `additional properties 'colour' not allowed`},
		{"missing member misspelt", `{"nodes":[{"id":"a","tpye":"set"}]}`,
			"workflow.nodes[0]", `missing property 'type' (did you mean "type" for "tpye"?)`},
		{"missing nodes misspelt", `{"nodez":[]}`,
			"workflow", `missing property 'nodes' (did you mean "nodes" for "nodez"?)`},
		{"missing member, other unknown", `{"nodes":[{"id":"a","colour":"set"}]}`,
			"workflow.nodes[0]", `missing property 'type'`},
		{"a misspelt value", `{"nodes":[{"id":"a","type":"set","onError":"continu","with":{"value":1}}]}`,
			"workflow.nodes[0].onError", `value must be one of 'fail', 'continue' (did you mean "continue"?)`},
		{"a value near none", `{"nodes":[{"id":"a","type":"set","onError":"ignore","with":{"value":1}}]}`,
			"workflow.nodes[0].onError", `value must be one of 'fail', 'continue'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantDetailAt(t, prepareInvalid(t, newTestEngine(nil), reqBody(tt.wf, "")), tt.path, tt.msg)
		})
	}
}

// wantDetailAt checks that inv has a detail at path and that its message
// is msg.
func wantDetailAt(t *testing.T, inv *protocol.Invalid, path, msg string) {
	t.Helper()
	for _, d := range inv.Details {
		if d.Path == path {
			if d.Message != msg {
				t.Errorf("at %s: %q\nwant %q", d.Path, d.Message, msg)
			}
			return
		}
	}
	t.Errorf("no detail at %s: %+v", path, inv.Details)
}

// suggested counts the details of inv that carry a "did you mean".
func suggested(inv *protocol.Invalid) int {
	n := 0
	for _, d := range inv.Details {
		if strings.Contains(d.Message, "did you mean") {
			n++
		}
	}
	return n
}

// TestTypelessNodeWith: a node whose type is missing, misspelt or not a
// string is told so once; its with is judged by no node type's rules (it
// used to be judged by all of them, each adding its own complaint).
func TestTypelessNodeWith(t *testing.T) {
	for _, tt := range []struct{ name, node, path, msg string }{
		{"misspelt type", `{"id":"a","tpye":"set","with":{"value":1}}`,
			"workflow.nodes[0]", `missing property 'type' (did you mean "type" for "tpye"?)`},
		{"no type, http's with", `{"id":"a","with":{"url":"https://x.example","method":"GET"}}`,
			"workflow.nodes[0]", `missing property 'type'`},
		{"no type, no with", `{"id":"a"}`, "workflow.nodes[0]", `missing property 'type'`},
		{"type not a string", `{"id":"a","type":7,"with":{"value":1}}`,
			"workflow.nodes[0].type", `got number, want string`},
		{"in a map", `{"id":"m","type":"map","with":{"items":[1],"nodes":[{"id":"b","with":{"value":1}}]}}`,
			"workflow.nodes[0].with.nodes[0]", `missing property 'type'`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inv := prepareInvalid(t, newTestEngine(nil), reqBody(`{"nodes":[`+tt.node+`]}`, ""))
			if len(inv.Details) != 1 || inv.Details[0].Path != tt.path || inv.Details[0].Message != tt.msg {
				t.Errorf("details %+v\nwant one, at %s: %q", inv.Details, tt.path, tt.msg)
			}
		})
	}
}

// TestInputNearMisses: a request's input that fails its schema by what
// looks like a typo (a string just outside an enum, a member just off a
// declared one) is told what it may have meant, as the document is.
func TestInputNearMisses(t *testing.T) {
	const schema = `{"type":"object","properties":{"name":{"type":"string"},"mode":{"enum":["fast","slow",3]},
		"tags":{"type":"array","items":{"enum":["red","green"]}},"opts":{"type":"object","properties":{"retries":{},"verbose":{}},"additionalProperties":false}},
		"required":["name"],"additionalProperties":false}`
	tests := []struct {
		name, input string
		path, msg   string
	}{
		{"a misspelt enum value", `{"name":"x","mode":"fsat"}`, "input.mode", `value must be one of "fast", "slow", 3 (did you mean "fast"?)`},
		{"a value near none", `{"name":"x","mode":"medium"}`, "input.mode", `value must be one of "fast", "slow", 3`},
		{"a number outside the enum", `{"name":"x","mode":4}`, "input.mode", `value must be one of "fast", "slow", 3`},
		{"in an array", `{"name":"x","tags":["red","gren"]}`, "input.tags[1]", `value must be one of "red", "green" (did you mean "green"?)`},
		{"a required member misspelt", `{"nmae":"x"}`, "input", `missing property 'name' (did you mean "name" for "nmae"?)`},
		{"a required member missing, another unknown", `{"colour":"x"}`, "input", `missing property 'name'`},
		{"an unknown member near a declared one", `{"name":"x","opts":{"verbos":true}}`, "input.opts", `additional property 'verbos' not allowed (did you mean "verbose"?)`},
		{"two unknown members", `{"name":"x","opts":{"verbos":true,"retires":1,"zzzzzz":1}}`, "input.opts",
			`additional properties 'retires', 'verbos', 'zzzzzz' not allowed (did you mean "retries" for "retires", "verbose" for "verbos"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantDetailAt(t, prepareInvalid(t, newTestEngine(nil), reqBody(`{"input":`+schema+`,"nodes":[]}`, tt.input)), tt.path, tt.msg)
		})
	}
}

// TestHostileInputNearMisses: suggestions for an input cost what the
// request's other suggestions may (at most 16 searches, each bounded),
// whatever the schema's enum or the input's size.
func TestHostileInputNearMisses(t *testing.T) {
	var enum, items strings.Builder
	// 2,000 values applied to 1,000 items: 2 million checks, within
	// the 4 million a validation may make.
	for i := range 2_000 {
		if i > 0 {
			enum.WriteByte(',')
		}
		fmt.Fprintf(&enum, `"value%05d"`, i)
	}
	for i := range 1_000 {
		if i > 0 {
			items.WriteByte(',')
		}
		fmt.Fprintf(&items, `"valeu%05d"`, i)
	}
	wf := `{"input":{"type":"array","items":{"enum":[` + enum.String() + `]}},"nodes":[]}`
	inv := prepareInvalid(t, newTestEngine(nil), reqBody(wf, "["+items.String()+"]"))
	hinted := suggested(inv)
	if hinted == 0 || hinted > 16 {
		t.Errorf("%d details, %d with a suggestion; want some, at most 16", len(inv.Details), hinted)
	}
}
