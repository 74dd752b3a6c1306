package engine

import (
	"strings"
	"testing"
)

// A bare workflow document is checked without a request, so what only the
// request's runtime can declare is a warning there and an error in a body.
func TestValidateBareRuntimeNames(t *testing.T) {
	tests := []struct {
		name, node, path string
	}{
		{"toolset", `{"id":"t","type":"tool","with":{"toolset":"gh","tool":"x","arguments":{}}}`, "nodes[0].with.toolset"},
		{"agent toolset", `{"id":"a","type":"agent","with":{"prompt":"p","toolsets":["gh"]}}`, "nodes[0].with.toolsets[0]"},
		{"model role", `{"id":"m","type":"model","with":{"role":"writer","prompt":"hi"}}`, "nodes[0].with.role"},
		{"child workflow", `{"id":"c","type":"workflow","with":{"workflow":"child"}}`, "nodes[0].with.workflow"},
		{"secret", `{"id":"h","type":"http","with":{"url":"https://api.example.com/${{ secrets.tok }}"}}`, "nodes[0].with.url"},
	}
	e := New(DefaultLimits())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"nodes":[` + tt.node + `]}`
			var found bool
			for _, p := range e.Validate([]byte(doc)) {
				if !p.Warning {
					t.Errorf("bare: error %s: %s", p.Path, p.Message)
					continue
				}
				if p.Path == tt.path && strings.Contains(p.Message, "runtime must supply it") {
					found = true
				}
			}
			if !found {
				t.Errorf("bare: no warning at %s", tt.path)
			}
			found = false
			for _, p := range e.Validate([]byte(`{"version":1,"workflow":` + doc + `}`)) {
				if p.Path == "workflow."+tt.path && !p.Warning {
					found = true
				}
			}
			if !found {
				t.Errorf("request body: no error at workflow.%s", tt.path)
			}
		})
	}
}
