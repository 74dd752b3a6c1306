package engine

import (
	"fmt"
	"strings"
	"testing"
)

// TestValidateEveryProblemOnePass: problems of different kinds in one body
// all come back together, each with its path and position.
func TestValidateEveryProblemOnePass(t *testing.T) {
	body := `{"version": 1,
 "workflow": {
  "bogus": 1,
  "input": {"type": "object", "properties": {"n": {"type": "number"}}, "additionalProperties": false},
  "nodes": [
   {"id": "a", "type": "set", "with": {"value": "${{ input.m }}"}},
   {"id": "b", "type": "set", "needs": ["zz"], "with": {"value": "${{ nodes.c.output }}"}},
   {"id": "c", "type": "nope"},
   {"id": "d", "type": "set", "when": "1 +", "with": {"value": 1}}
  ]
 },
 "input": {"n": "x"},
 "permissions": [], "permissions": null
}`
	got := New(DefaultLimits()).Validate([]byte(body))
	want := map[string]string{
		"permissions":                  "duplicate key",
		"workflow":                     "additional properties",
		"workflow.nodes[1].needs[0]":   "unknown node id",
		"workflow.nodes[1].with.value": "not upstream",
		"workflow.nodes[2].type":       "unknown node type",
		"workflow.nodes[3].when":       "",
		"input.n":                      "",
	}
	for path, frag := range want {
		found := false
		for _, p := range got {
			if p.Path == path && strings.Contains(p.Message, frag) {
				found = true
				if p.Line == 0 || p.Offset < 0 {
					t.Errorf("%s: no position (%+v)", path, p)
				}
			}
		}
		if !found {
			t.Errorf("no problem at %s containing %q", path, frag)
		}
	}
	if t.Failed() {
		for _, p := range got {
			t.Logf("%d:%d %s: %s (warning %v)", p.Line, p.Column, p.Path, p.Message, p.Warning)
		}
	}
}

func TestValidatePositions(t *testing.T) {
	tests := []struct {
		name, src string
		path      string
		line, col int
	}{
		{"syntax", "{\n \"version\": 1,\n \"workflow\": {]\n}", "", 3, 15},
		{"bare document", "{\n  \"nodes\": [\n    {\"id\": \"a\", \"type\": \"nope\"}\n  ]\n}", "nodes[0].type", 3, 25},
		{"bare syntax", "{\n  \"nodes\": [,]}", "", 2, 13},
		{"request", "{\"version\": 1,\n\"workflow\": {\"nodes\": [{\"id\": \"a\", \"type\": \"set\", \"needs\": [\"q\"]}]}}", "workflow.nodes[0].needs[0]", 2, 61},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New(DefaultLimits()).Validate([]byte(tt.src))
			var all []string
			for _, p := range got {
				all = append(all, fmt.Sprintf("%d:%d %s: %s", p.Line, p.Column, p.Path, p.Message))
				if p.Path == tt.path && p.Line == tt.line && p.Column == tt.col && !p.Warning {
					return
				}
			}
			t.Errorf("want an error at %d:%d %s, got %q", tt.line, tt.col, tt.path, all)
		})
	}
}

func TestInputReferences(t *testing.T) {
	tests := []struct {
		name, schema, expr string
		want               string // "" : no problem
		warning            bool
	}{
		{"declared", `{"properties":{"priority":{}}}`, "input.priority == 'high'", "", false},
		{"closed, misspelled", `{"properties":{"priority":{}},"additionalProperties":false}`, "input.prioirty == 'high'",
			`input.prioirty is not a property of the workflow's input schema, which allows no others (additionalProperties: false) (did you mean "priority"?)`, false},
		{"open, misspelled", `{"type":"object","properties":{"priority":{}}}`, "input.prioirty == 'high'",
			`input.prioirty is not declared by the workflow's input schema (did you mean "priority"?)`, true},
		{"no properties said", `{"type":"object"}`, "input.anything", "", false},
		{"no schema", ``, "input.anything", "", false},
		{"indexed dynamically", `{"properties":{"a":{}},"additionalProperties":false}`, "input['a']", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := ""
			if tt.schema != "" {
				input = `"input":` + tt.schema + `,`
			}
			doc := `{` + input + `"nodes":[{"id":"a","type":"set","when":"` + tt.expr + `","with":{"value":"${{ ` + tt.expr + ` }}"}}]}`
			got := New(DefaultLimits()).Validate([]byte(doc))
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("unexpected %+v", got)
				}
				return
			}
			for _, path := range []string{"nodes[0].when", "nodes[0].with.value"} {
				found := false
				for _, p := range got {
					if p.Path == path && strings.Contains(p.Message, tt.want) && p.Warning == tt.warning && p.Line == 1 {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s at %s (warning %v) in %+v", tt.want, path, tt.warning, got)
				}
			}
		})
	}
}

// TestValidateGoesOnPastDuplicateIDs: a duplicate node id does not hide the
// problems of the other nodes.
func TestValidateGoesOnPastDuplicateIDs(t *testing.T) {
	doc := `{"nodes":[{"id":"a","type":"set"},{"id":"a","type":"set"},{"id":"b","type":"nope","needs":["a"]}]}`
	got := New(DefaultLimits()).Validate([]byte(doc))
	want := map[string]bool{"nodes[1].id": false, "nodes[2].type": false}
	for _, p := range got {
		if _, ok := want[p.Path]; ok {
			want[p.Path] = true
		}
	}
	for path, found := range want {
		if !found {
			t.Errorf("no problem at %s in %+v", path, got)
		}
	}
}
