package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// exprInput is the execution input of the interpolation tests.
const exprInput = `{"n":42,"f":1.5,"s":"text","t":true,"obj":{"a":1,"b":[true,null]},"list":[1,"two"],"nothing":null,"html":"<b>&</b>"}`

func TestInterpolation(t *testing.T) {
	tests := []struct {
		name  string
		value string // with.value of a set node, as JSON
		want  string // its output, as JSON
	}{
		// A string that is exactly one ${{ }} keeps the value's type.
		{"typed number", `"${{ input.n }}"`, `42`},
		{"typed float", `"${{ input.f }}"`, `1.5`},
		{"typed bool", `"${{ input.n > 1 }}"`, `true`},
		{"typed string", `"${{ input.s }}"`, `"text"`},
		{"typed object", `"${{ input.obj }}"`, `{"a":1,"b":[true,null]}`},
		{"typed array", `"${{ input.list }}"`, `[1,"two"]`},
		{"typed null", `"${{ input.nothing }}"`, `null`},
		{"typed, spaces inside the braces", `"${{input.n}}"`, `42`},
		// Mixed text: strings as they are, null as nothing, the rest as
		// JSON.
		{"mixed number", `"n=${{ input.n }}"`, `"n=42"`},
		{"mixed float", `"${{ input.f }}x"`, `"1.5x"`},
		{"mixed bool", `"is ${{ input.t }}"`, `"is true"`},
		{"mixed string", `"s=${{ input.s }}"`, `"s=text"`},
		{"mixed object", `"o=${{ input.obj }}"`, `"o={\"a\":1,\"b\":[true,null]}"`},
		{"mixed array", `"l=${{ input.list }}"`, `"l=[1,\"two\"]"`},
		{"mixed null", `"z=${{ input.nothing }}!"`, `"z=!"`},
		{"mixed, text around is kept", `"  ${{ input.n }} "`, `"  42 "`},
		{"two expressions", `"${{ input.n }}${{ input.n }}"`, `"4242"`},
		{"mixed string kept raw", `"h=${{ input.html }}"`, `"h=<b>&</b>"`},
		// $${{ is a literal ${{, even around a real expression.
		{"escape", `"$${{ input.n }}"`, `"${{ input.n }}"`},
		{"escape of an unknown name", `"$${{ nope }}"`, `"${{ nope }}"`},
		{"escape and expression", `"a $${{ x }} b ${{ input.n }}"`, `"a ${{ x }} b 42"`},
		{"no template", `"plain $ {{ text }}"`, `"plain $ {{ text }}"`},
		// Templates inside objects and arrays.
		{"object member", `{"k":"${{ input.n }}","l":"lit"}`, `{"k":42,"l":"lit"}`},
		{"array element", `["${{ input.obj.a }}","x",{"y":"${{ input.s }}!"}]`, `[1,"x",{"y":"text!"}]`},
		{"literal number", `7`, `7`},
		{"execution id", `"${{ execution.id }}"`, `"` + testExecutionID + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wf := fmt.Sprintf(`{"nodes":[{"id":"v","type":"set","with":{"value":%s}}],"output":"${{ nodes.v.output }}"}`, tt.value)
			s, _ := runBody(t, newTestEngine(nil), reqBody(wf, exprInput))
			wantOutput(t, s.result(t), tt.want)
		})
	}
}

func TestMixedInterpolationDoesNotEscapeHTML(t *testing.T) {
	// JSON inside text is for people and models to read; \u003c would only
	// obscure it.
	wf := `{"nodes":[{"id":"v","type":"set","with":{"value":"o=${{ input.o }}"}}],"output":"${{ nodes.v.output }}"}`
	s, _ := runBody(t, newTestEngine(nil), reqBody(wf, `{"o":{"tag":"<b>&</b>"}}`))
	wantOutput(t, s.result(t), `"o={\"tag\":\"<b>&</b>\"}"`)
}

func TestRunTimeExpressionError(t *testing.T) {
	tests := []struct {
		name string
		wf   string
		node string // the node that fails
		src  string // quoted in the message
	}{
		{
			name: "with",
			wf: `{"nodes":[{"id":"a","type":"set","with":{"value":1}},
				{"id":"bad","type":"set","needs":["a"],"with":{"value":"${{ input.missing.deeper }}"}},
				{"id":"after","type":"set","needs":["bad"],"with":{"value":2}}]}`,
			node: "bad",
			src:  "input.missing.deeper",
		},
		{
			name: "mixed text",
			wf:   `{"nodes":[{"id":"bad","type":"set","with":{"value":"x=${{ int(input.word) }}"}},{"id":"after","type":"set","needs":["bad"]}]}`,
			node: "bad",
			src:  "int(input.word)",
		},
		{
			name: "when",
			wf:   `{"nodes":[{"id":"bad","type":"set","when":"input.missing.deeper == 1","with":{"value":1}},{"id":"after","type":"set","needs":["bad"]}]}`,
			node: "bad",
			src:  "input.missing.deeper == 1",
		},
		{
			name: "when not a boolean",
			wf:   `{"nodes":[{"id":"bad","type":"set","when":"input.word","with":{"value":1}},{"id":"after","type":"set","needs":["bad"]}]}`,
			node: "bad",
			src:  "input.word",
		},
		{
			name: "output",
			wf:   `{"nodes":[{"id":"a","type":"set","with":{"value":1}}],"output":{"x":"${{ nodes.a.output.field.deeper }}"}}`,
			src:  "nodes.a.output.field.deeper",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := runBody(t, newTestEngine(nil), reqBody(tt.wf, `{"word":"seven"}`))
			term := s.failure(t)
			if !strings.Contains(term.Error.Message, tt.src) {
				t.Errorf("terminal message %q does not quote the expression %q", term.Error.Message, tt.src)
			}
			if tt.node == "" {
				return
			}
			if term.Error.NodeID != tt.node || !strings.Contains(term.Error.Message, string(protocol.CodeExpressionError)) {
				t.Errorf("terminal error = %+v, want node %s and %s", term.Error, tt.node, protocol.CodeExpressionError)
			}
			f := s.nodeFailed(tt.node)
			if f == nil || f.Error.Code != protocol.CodeExpressionError || f.Retrying {
				t.Fatalf("node.failed of %s = %+v, want %s, not retrying", tt.node, f, protocol.CodeExpressionError)
			}
			if !strings.Contains(f.Error.Message, tt.src) {
				t.Errorf("node.failed message %q does not quote %q", f.Error.Message, tt.src)
			}
			if i := s.index(protocol.TypeNodeStarted, "after"); i >= 0 {
				t.Errorf("the dependent of a failed node started (event %d)", i)
			}
		})
	}
}

func TestExpressionErrorIsNotRetried(t *testing.T) {
	// Another attempt cannot change what an expression evaluates to.
	wf := `{"nodes":[{"id":"bad","type":"set","retry":{"maxAttempts":3,"backoffMs":1},"with":{"value":"${{ input.missing.x }}"}}]}`
	s, _ := runBody(t, newTestEngine(nil), reqBody(wf, `{}`))
	s.failure(t)
	if n := s.count(protocol.TypeNodeFailed, "bad"); n != 1 {
		t.Errorf("%d node.failed events, want 1", n)
	}
}

func TestStatusAndErrorInScope(t *testing.T) {
	// nodes.<id> holds status, output and error, whatever the node's end.
	wf := `{"nodes":[
		{"id":"ok","type":"set","with":{"value":{"deep":[1,2]}}},
		{"id":"bad","type":"fail","onError":"continue","with":{"code":"NOPE","message":"no"}},
		{"id":"off","type":"set","when":"false"},
		{"id":"view","type":"set","needs":["ok","bad","off"],"with":{"value":{
			"ok":"${{ nodes.ok }}","bad":"${{ nodes.bad }}","off":"${{ nodes.off }}","second":"${{ nodes.ok.output.deep[1] }}"}}}],
		"output":"${{ nodes.view.output }}"}`
	s, _ := runBody(t, newTestEngine(nil), reqBody(wf, ""))
	wantOutput(t, s.result(t), `{
		"ok":{"status":"completed","output":{"deep":[1,2]},"error":null},
		"bad":{"status":"failed","output":null,"error":{"code":"NOPE","message":"no"}},
		"off":{"status":"skipped","output":null,"error":null},
		"second":2}`)
}

// TestTemplateValuesAreJSON checks that templated outputs survive the wire:
// what a result carries decodes to what the expression produced.
func TestTemplateValuesAreJSON(t *testing.T) {
	wf := `{"nodes":[{"id":"v","type":"set","with":{"value":"${{ {'k': [1, 2.5, 'x', nil, true]} }}"}}],"output":"${{ nodes.v.output }}"}`
	s, _ := runBody(t, newTestEngine(nil), reqBody(wf, ""))
	res := s.result(t)
	if !json.Valid(res.Output) {
		t.Fatalf("output %q is not JSON", res.Output)
	}
	wantOutput(t, res, `{"k":[1,2.5,"x",null,true]}`)
}

// Compiled programs are cached by source text (engine/lang/cache.go); what
// depends on where an expression sits must still be checked every time.
func TestCachedProgramsAreCheckedInPlace(t *testing.T) {
	e := newTestEngine(nil)
	const expr = "${{ nodes.a.output }}"
	prepareReq(t, e, reqBody(`{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","needs":["a"],"with":{"value":"`+expr+`"}}]}`, ""))
	inv := prepareInvalid(t, e, reqBody(`{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","with":{"value":"`+expr+`"}}]}`, ""))
	wantProblems(t, inv.Details, []problem{{"workflow.nodes[1].with.value", []string{"nodes.a is not upstream"}}}, nil)
}

func TestCachedProgramsKeepTheirOptions(t *testing.T) {
	// The same text as a template yields any value, as a when a boolean
	// or an error: the two must not share a program.
	e := newTestEngine(nil)
	s, _ := runBody(t, e, reqBody(`{"nodes":[{"id":"v","type":"set","with":{"value":"${{ input.cached_v }}"}}]}`, `{"cached_v":"x"}`))
	wantOutput(t, s.result(t), `{"v":"x"}`)
	s, _ = runBody(t, e, reqBody(`{"nodes":[{"id":"v","type":"set","when":"input.cached_v"}]}`, `{"cached_v":"x"}`))
	if f := s.nodeFailed("v"); f == nil || f.Error.Code != protocol.CodeExpressionError {
		t.Errorf("a when of a string: node.failed %+v, want %s", f, protocol.CodeExpressionError)
	}
}
