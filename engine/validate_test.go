package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// problem is one detail a refused request must carry: its exact path and
// fragments of its message.
type problem struct {
	path string
	msg  []string
}

// wantProblems checks that every wanted problem is among the details, and
// that no detail mentions a forbidden fragment.
func wantProblems(t *testing.T, details []protocol.Detail, want []problem, forbid []string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, d := range details {
			if d.Path != w.path {
				continue
			}
			all := true
			for _, m := range w.msg {
				all = all && strings.Contains(d.Message, m)
			}
			found = found || all
		}
		if !found {
			t.Errorf("no detail at %q containing %q; details: %+v", w.path, w.msg, details)
		}
	}
	for _, f := range forbid {
		for _, d := range details {
			if strings.Contains(d.Message, f) {
				t.Errorf("detail %+v mentions %q", d, f)
			}
		}
	}
}

func TestPrepareRejects(t *testing.T) {
	tests := []struct {
		name   string
		wf     string
		input  string
		want   []problem
		forbid []string
	}{
		{
			name: "cycle of two",
			wf: `{"nodes":[{"id":"a","type":"set","needs":["b"]},{"id":"b","type":"set","needs":["a"]},
				{"id":"c","type":"set"}]}`,
			want: []problem{{"workflow.nodes[0].needs", []string{"cycle: a needs b needs a"}}},
		},
		{
			// The message shows the cycle itself, not the path into it.
			name: "cycle behind a tail",
			wf: `{"nodes":[{"id":"tail","type":"set","needs":["a"]},{"id":"a","type":"set","needs":["b"]},
				{"id":"b","type":"set","needs":["c"]},{"id":"c","type":"set","needs":["a"]}]}`,
			want:   []problem{{"workflow.nodes[1].needs", []string{"cycle: a needs b needs c needs a"}}},
			forbid: []string{"tail"},
		},
		{
			name: "self need",
			wf:   `{"nodes":[{"id":"a","type":"set","needs":["a"]}]}`,
			want: []problem{{"workflow.nodes[0].needs[0]", []string{`"a"`, "itself"}}},
		},
		{
			name: "unknown need",
			wf:   `{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","needs":["a","ghost"]}]}`,
			want: []problem{{"workflow.nodes[1].needs[1]", []string{`unknown node id "ghost"`}}},
		},
		{
			name: "duplicate id",
			wf:   `{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set"},{"id":"a","type":"set"}]}`,
			want: []problem{{"workflow.nodes[2].id", []string{`duplicate node id "a"`, "nodes[0]"}}},
		},
		{
			name: "unknown root name in with",
			wf:   `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ foo.bar }}"}}]}`,
			want: []problem{{"workflow.nodes[0].with.value", []string{`unknown name "foo"`}}},
		},
		{
			name: "unknown root name in mixed text",
			wf:   `{"nodes":[{"id":"a","type":"set","with":{"value":{"deep":["x ${{ env.HOME }}"]}}}]}`,
			want: []problem{{"workflow.nodes[0].with.value.deep[0]", []string{`unknown name "env"`}}},
		},
		{
			name: "unknown root name in when",
			wf:   `{"nodes":[{"id":"a","type":"set","when":"bogus == 1"}]}`,
			want: []problem{{"workflow.nodes[0].when", []string{`unknown name "bogus"`}}},
		},
		{
			name: "unknown root name in output",
			wf:   `{"nodes":[{"id":"a","type":"set"}],"output":{"x":"${{ nope }}"}}`,
			want: []problem{{"workflow.output.x", []string{`unknown name "nope"`}}},
		},
		{
			name: "item outside a map",
			wf:   `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ item }}"}}]}`,
			want: []problem{{"workflow.nodes[0].with.value", []string{"item", "map"}}},
		},
		{
			name: "secrets outside an http node",
			wf:   `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ secrets.token }}"}}]}`,
			want: []problem{{"workflow.nodes[0].with.value", []string{"secrets"}}},
		},
		{
			name: "sibling is not upstream",
			wf:   `{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","with":{"value":"${{ nodes.a.output }}"}}]}`,
			want: []problem{{"workflow.nodes[1].with.value", []string{"nodes.a is not upstream"}}},
		},
		{
			name: "dependent is not upstream",
			wf:   `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ nodes.b.output }}"}},{"id":"b","type":"set","needs":["a"]}]}`,
			want: []problem{{"workflow.nodes[0].with.value", []string{"nodes.b is not upstream"}}},
		},
		{
			name: "unknown node in an expression",
			wf:   `{"nodes":[{"id":"a","type":"set","when":"nodes.ghost.status == 'completed'"}]}`,
			want: []problem{{"workflow.nodes[0].when", []string{"nodes.ghost is not upstream"}}},
		},
		{
			name: "index syntax is checked too",
			wf:   `{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","with":{"value":"${{ nodes['a'].output }}"}}]}`,
			want: []problem{{"workflow.nodes[1].with.value", []string{"nodes.a is not upstream"}}},
		},
		{
			name: "output sees every node",
			wf:   `{"nodes":[{"id":"a","type":"set"}],"output":"${{ nodes.b.output }}"}`,
			want: []problem{{"workflow.output", []string{"nodes.b"}}},
		},
		{
			name: "syntax error",
			wf:   `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ 1 + }}"}}]}`,
			want: []problem{{"workflow.nodes[0].with.value", []string{`expression "1 +"`}}},
		},
		{
			name: "unterminated template",
			wf:   `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ input.x"}}]}`,
			want: []problem{{"workflow.nodes[0].with.value", []string{"unterminated"}}},
		},
		{
			name: "empty template",
			wf:   `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ }}"}}]}`,
			want: []problem{{"workflow.nodes[0].with.value", []string{"empty expression"}}},
		},
		{
			name: "when syntax error",
			wf:   `{"nodes":[{"id":"a","type":"set","when":"input.x =="}]}`,
			want: []problem{{"workflow.nodes[0].when", []string{"input.x =="}}},
		},
		{
			name: "stateless runner: wait",
			wf:   `{"nodes":[{"id":"a","type":"set"},{"id":"pause","type":"wait","needs":["a"]}]}`,
			want: []problem{{"workflow.nodes[1].type", []string{`node "pause"`, `"wait"`, "checkpoint"}}},
		},
		{
			name: "stateless runner: approval",
			wf:   `{"nodes":[{"id":"sign","type":"approval"}]}`,
			want: []problem{{"workflow.nodes[0].type", []string{`node "sign"`, `"approval"`, "checkpoint"}}},
		},
		{
			name: "stateless runner: value.get",
			wf:   `{"nodes":[{"id":"counter","type":"value.get","with":{"key":"n"}}]}`,
			want: []problem{{"workflow.nodes[0].type", []string{`node "counter"`, `"value.get"`, "persistent-value"}}},
		},
		{
			name: "unknown type",
			wf:   `{"nodes":[{"id":"beam","type":"teleport"}]}`,
			want: []problem{{"workflow.nodes[0].type", []string{`node "beam"`, `unknown node type "teleport"`, "this runner runs ", "fail, ", "map, ", "set, "}}},
		},
		{
			name: "unknown type near a known one",
			wf:   `{"nodes":[{"id":"beam","type":"htttp","with":{"url":"https://x.example"}}]}`,
			want: []problem{{"workflow.nodes[0].type", []string{`unknown node type "htttp" (did you mean "http"? this runner runs `}}},
		},
		{
			name: "unknown type near none",
			wf:   `{"nodes":[{"id":"beam","type":"teleport"}]}`,
			want: []problem{{"workflow.nodes[0].type", []string{`unknown node type "teleport" (this runner runs `}}},
		},
		{
			name: "bad node id",
			wf:   `{"nodes":[{"id":"1st","type":"set"}]}`,
			want: []problem{{"workflow.nodes[0].id", nil}},
		},
		{
			name: "unknown node field",
			wf:   `{"nodes":[{"id":"a","type":"set","need":["b"]}]}`,
			want: []problem{{"workflow.nodes[0]", []string{"need"}}},
		},
		{
			name: "no nodes",
			wf:   `{"id":"empty"}`,
			want: []problem{{"workflow", []string{"nodes"}}},
		},
		{
			name:  "input misses a required property",
			wf:    `{"input":{"type":"object","required":["name"]},"nodes":[{"id":"a","type":"set"}]}`,
			input: `{}`,
			want:  []problem{{"input", []string{"name"}}},
		},
		{
			name:  "input property of the wrong type",
			wf:    `{"input":{"type":"object","properties":{"name":{"type":"string"}}},"nodes":[{"id":"a","type":"set"}]}`,
			input: `{"name":7}`,
			want:  []problem{{"input.name", []string{"string"}}},
		},
		{
			name: "absent input against a schema",
			wf:   `{"input":{"type":"object"},"nodes":[{"id":"a","type":"set"}]}`,
			want: []problem{{"input", nil}},
		},
		{
			name: "input schema that is no schema",
			wf:   `{"input":{"type":5},"nodes":[{"id":"a","type":"set"}]}`,
			want: []problem{{"workflow.input.type", []string{"invalid JSON Schema", "must be a type name"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := prepareInvalid(t, newTestEngine(nil), reqBody(tt.wf, tt.input))
			wantProblems(t, inv.Details, tt.want, tt.forbid)
		})
	}
}

func TestPrepareReportsEveryProblem(t *testing.T) {
	// One request, several independent problems: the caller learns all of
	// them at once.
	wf := `{"nodes":[
		{"id":"a","type":"set","with":{"value":"${{ foo }}"}},
		{"id":"b","type":"wait"},
		{"id":"c","type":"set","when":"nodes.b.status == 'x'"}]}`
	inv := prepareInvalid(t, newTestEngine(nil), reqBody(wf, ""))
	paths := map[string]bool{}
	for _, d := range inv.Details {
		paths[d.Path] = true
	}
	for _, p := range []string{"workflow.nodes[0].with.value", "workflow.nodes[1].type", "workflow.nodes[2].when"} {
		if !paths[p] {
			t.Errorf("no detail at %s; details: %+v", p, inv.Details)
		}
	}
}

func TestPrepareAccepts(t *testing.T) {
	// Each of these is valid, and must stay so.
	tests := []struct{ name, wf, input string }{
		{"single node", `{"nodes":[{"id":"a","type":"set"}]}`, ""},
		{"no nodes at all", `{"nodes":[]}`, ""},
		{"transitive reference", `{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","needs":["a"]},
			{"id":"c","type":"set","needs":["b"],"with":{"value":"${{ nodes.a.output }}"}}]}`, ""},
		{"optional chaining and let", `{"nodes":[{"id":"a","type":"set","with":{"value":"${{ let x = input?.y; x ?? 1 }}"}}]}`, ""},
		{"id with dash and underscore", `{"nodes":[{"id":"_a-b","type":"set"}]}`, ""},
		{"escaped template of an unknown name", `{"nodes":[{"id":"a","type":"set","with":{"value":"$${{ whatever }}"}}]}`, ""},
		{"item inside a map", `{"nodes":[{"id":"m","type":"map","with":{"items":[1,2],
			"nodes":[{"id":"i","type":"set","with":{"value":"${{ item * index }}"}}]}}]}`, ""},
		{"input matching its schema", `{"input":{"type":"object","required":["n"]},"nodes":[{"id":"a","type":"set"}]}`, `{"n":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prepareReq(t, newTestEngine(nil), reqBody(tt.wf, tt.input))
		})
	}
}

func TestPrepareMaxNodes(t *testing.T) {
	e := newTestEngine(nil)
	e.Limits.MaxNodes = 3
	var nodes []string
	for i := range 4 {
		nodes = append(nodes, fmt.Sprintf(`{"id":"n%d","type":"set"}`, i))
	}
	inv := prepareInvalid(t, e, reqBody(`{"nodes":[`+strings.Join(nodes, ",")+`]}`, ""))
	wantProblems(t, inv.Details, []problem{{"workflow.nodes", []string{"maxNodes (3)"}}}, nil)
}
