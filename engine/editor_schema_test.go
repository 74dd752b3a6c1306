package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/runnerd/lambda-runner/docs"
	"github.com/runnerd/lambda-runner/engine/sandbox/syntax"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestExamplesMatchEditorSchema: every request body in examples/ validates
// against docs/execution.schema.json, which reaches the workflow schema
// through its $id, as an editor resolves it; and the runner's own Validate
// finds no error in it.
func TestExamplesMatchEditorSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	for _, s := range [][]byte{docs.WorkflowSchema, docs.ExecutionSchema} {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if id == "" {
			t.Fatal("schema without $id")
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
	}
	sch, err := c.Compile("https://runnerd.dev/schemas/execution-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../examples/*.json")
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	e := New(DefaultLimits())
	e.Services.Code = syntax.Checker{} // checks code nodes; starts no worker
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(inst); err != nil {
				t.Errorf("does not match docs/execution.schema.json: %v", err)
			}
			for _, p := range e.Validate(raw) {
				if !p.Warning {
					t.Errorf("%d:%d %s: %s", p.Line, p.Column, p.Path, p.Message)
				}
			}
		})
	}
	// A body an editor must flag: the wrong version, a node without a type.
	bad, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(`{"version":2,"workflow":{"nodes":[{"id":"a"}]}}`)))
	if sch.Validate(bad) == nil {
		t.Error("a bad body matches the execution schema")
	}
}
