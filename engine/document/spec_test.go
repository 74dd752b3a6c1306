package document

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTypedMembersAreSpecified: each member the decode holds typed is a
// field of the spec, of a type the typed check reads (check.go): a string
// as a String, needs as an Array, the nodes as nodes, input and output,
// held as text, by a rule on their JSON type alone.
func TestTypedMembersAreSpecified(t *testing.T) {
	byType := func(t *Type) bool {
		switch t.Kind {
		case Any, ObjectOrBool, Boolean:
			return !t.Template
		case Object:
			return !t.Template && t.Fields == nil && t.Values == nil
		}
		return false
	}
	for _, c := range []struct {
		fields []Field
		typed  map[string]docMembers
	}{{Workflow.Fields, docTyped}, {node.Fields, nodeTyped}} {
		for name, bit := range c.typed {
			f := field(c.fields, name)
			if f == nil {
				t.Errorf("the decode holds %q typed, which the spec does not name", name)
				continue
			}
			ok := false
			switch bit {
			case hasID, hasType, hasWhen:
				ok = f.Type.Kind == String && !f.Type.Template
			case hasNeeds:
				ok = f.Type.Kind == Array && !f.Type.Template
			case hasNodes:
				ok = f.Type.Kind == Nodes || f.Type.Kind == Array && !f.Type.Template && f.Type.Items != nil && f.Type.Items.Kind == OneNode
			case hasWith, hasInput, hasOutput:
				ok = byType(&f.Type)
			}
			if !ok {
				t.Errorf("the decode holds %q typed, which the typed check cannot hold to its spec (%+v)", name, f.Type)
			}
		}
	}
}

// TestCheckFollowsTheSpec: a rule changed in the spec is the rule the
// check applies, at the document's level as in a with.
func TestCheckFollowsTheSpec(t *testing.T) {
	timeout := &field(node.Fields, "timeoutMs").Type
	version := &field(Workflow.Fields, "version").Type
	defer func(min, v int) { timeout.Minimum, version.Value = min, v }(timeout.Minimum, version.Value)
	timeout.Minimum, version.Value = 5, 2
	d := &Problems{}
	Parse("workflow", json.RawMessage(`{"version":1,"nodes":[{"id":"a","type":"t","timeoutMs":4}]}`), 0, nil, d)
	var got []string
	for _, p := range d.Errors() {
		got = append(got, p.Path+": "+p.Message)
	}
	want := "workflow.nodes[0].timeoutMs: minimum: got 4, want 5|workflow.version: value must be 2"
	if strings.Join(got, "|") != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
