package engine

import (
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/protocol"
)

// TestStrictReferences: each mistake an author makes in a name is a 400 at
// the field's path, with a "did you mean" for a near miss.
func TestStrictReferences(t *testing.T) {
	const page = `{"id":"page","type":"set","with":{"value":{"body":"b"}}}`
	tests := []struct {
		name string
		node string // the second node, which needs page
		path string
		want []string
	}{
		{"misspelt state field", `{"id":"b","type":"set","needs":["page"],"with":{"value":"${{ nodes.page.ouput }}"}}`,
			"workflow.nodes[1].with.value", []string{"nodes.page.ouput is not a field", `did you mean "output"`}},
		{"state field with optional chaining", `{"id":"b","type":"set","needs":["page"],"with":{"value":"${{ nodes.page?.stauts }}"}}`,
			"workflow.nodes[1].with.value", []string{"nodes.page.stauts is not a field", `did you mean "status"`}},
		{"state field by index", `{"id":"b","type":"set","needs":["page"],"with":{"value":"${{ nodes['page']['outptu'] }}"}}`,
			"workflow.nodes[1].with.value", []string{"nodes.page.outptu is not a field", `did you mean "output"`}},
		{"unknown field without a near miss", `{"id":"b","type":"set","needs":["page"],"with":{"value":"${{ nodes.page.body }}"}}`,
			"workflow.nodes[1].with.value", []string{"nodes.page.body is not a field", "status, output and error"}},
		{"misspelt error field", `{"id":"b","type":"set","needs":["page"],"with":{"value":"${{ nodes.page.error.cod }}"}}`,
			"workflow.nodes[1].with.value", []string{"nodes.page.error.cod is not a field", `did you mean "code"`}},
		{"misspelt node id", `{"id":"b","type":"set","needs":["page"],"with":{"value":"${{ nodes.pgae.output }}"}}`,
			"workflow.nodes[1].with.value", []string{"nodes.pgae is not upstream", `did you mean "page"`}},
		{"misspelt root name", `{"id":"b","type":"set","needs":["page"],"with":{"value":"${{ inptu.x }}"}}`,
			"workflow.nodes[1].with.value", []string{`unknown name "inptu"`, `did you mean "input"`}},
		{"misspelt field in when", `{"id":"b","type":"set","needs":["page"],"when":"nodes.page.otuput.body == 'x'"}`,
			"workflow.nodes[1].when", []string{"nodes.page.otuput is not a field", `did you mean "output"`}},
		{"when that is a string", `{"id":"b","type":"set","needs":["page"],"when":"'yes'"}`,
			"workflow.nodes[1].when", []string{"gives a string, not a boolean"}},
		{"when that is a number", `{"id":"b","type":"set","needs":["page"],"when":"${{ 1 + 2 }}"}`,
			"workflow.nodes[1].when", []string{"gives a number, not a boolean"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := prepareInvalid(t, newTestEngine(nil), reqBody(`{"nodes":[`+page+`,`+tt.node+`]}`, ""))
			wantProblems(t, inv.Details, []problem{{tt.path, tt.want}}, []string{"bool(", "Bracket", "unexpected token"})
		})
	}
}

// TestStrictReferencesAllowed: what the strict rules must not refuse.
func TestStrictReferencesAllowed(t *testing.T) {
	for _, wf := range []string{
		`{"nodes":[{"id":"a","type":"set","with":{"value":{"output":1}}},{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output.output + (nodes.a.status == 'completed' ? 1 : 0) }}"}}]}`,
		`{"nodes":[{"id":"a","type":"fail","onError":"continue"},{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.error.code + nodes.a.error.message }}"}}]}`,
		`{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ len(nodes) + len(nodes.a) }}"}}]}`,
		`{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","needs":["a"],"when":"${{ nodes.a.status == 'completed' }}"}]}`,
	} {
		prepareReq(t, newTestEngine(nil), reqBody(wf, ""))
	}
}

// TestWhenIsBooleanOrAnError: a `when` that gives anything but a boolean
// fails its node, naming the node, the expression and the type it got.
func TestWhenIsBooleanOrAnError(t *testing.T) {
	tests := []struct {
		name, when string
		want       []string
	}{
		{"misspelt output field gives null", "nodes.classify.output.urgnet", []string{`when "nodes.classify.output.urgnet" gave null, not a boolean: nodes.classify.output.urgnet is null (nodes.classify.output has no key "urgnet"; it has "urgent")`}},
		{"a null that is not a reference", "nodes.classify.output.urgnet ?? nil", []string{"gave null", "is every name in it spelled right?"}},
		{"a string", "input.word", []string{"gave a string, not a boolean"}},
		{"a number", "input.n", []string{"gave a number, not a boolean"}},
		{"an object", "nodes.classify.output", []string{"gave an object, not a boolean"}},
		{"wrapped in a template", "${{ nodes.classify.output.urgnet }}", []string{"gave null", `has no key "urgnet"; it has "urgent"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wf := `{"nodes":[{"id":"classify","type":"set","with":{"value":{"urgent":true}}},
				{"id":"page","type":"set","needs":["classify"],"when":"` + tt.when + `","with":{"value":1}},
				{"id":"after","type":"set","needs":["page"]}]}`
			s, _ := runBody(t, newTestEngine(nil), reqBody(wf, `{"word":"seven","n":3}`))
			f := s.nodeFailed("page")
			if f == nil || f.Error.Code != protocol.CodeExpressionError {
				t.Fatalf("node.failed = %+v, want %s", f, protocol.CodeExpressionError)
			}
			for _, w := range tt.want {
				if !strings.Contains(f.Error.Message, w) {
					t.Errorf("message %q lacks %q", f.Error.Message, w)
				}
			}
			if term := s.failure(t); term.Error.NodeID != "page" {
				t.Errorf("terminal names %q, want page", term.Error.NodeID)
			}
		})
	}
	// A real boolean, template-wrapped, still decides.
	wf := `{"nodes":[{"id":"classify","type":"set","with":{"value":{"urgent":true}}},
		{"id":"page","type":"set","needs":["classify"],"when":"${{ nodes.classify.output.urgent }}","with":{"value":1}}]}`
	s, _ := runBody(t, newTestEngine(nil), reqBody(wf, ""))
	wantOutput(t, s.result(t), `{"page":1}`)
}

func TestDidYouMean(t *testing.T) {
	stateFields := []string{"status", "output", "error"}
	tests := []struct {
		name  string
		cands []string
		want  string
	}{
		{"ouput", stateFields, `"output"`},
		{"stauts", stateFields, `"status"`},
		{"eror", stateFields, `"error"`},
		{"body", stateFields, ""},
		{"x", []string{"y"}, `"y"`},
		{"input", []string{"input"}, ""},
		{"prioirty", []string{"priority", "title"}, `"priority"`},
		{strings.Repeat("a", 100), []string{strings.Repeat("a", 99)}, ""},
	}
	for _, tt := range tests {
		got := lang.DidYouMean(tt.name, tt.cands)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("DidYouMean(%q) = %q, want %s", tt.name, got, tt.want)
		}
	}
}
