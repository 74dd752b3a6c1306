package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/runnerd/lambda-runner/docs"
	"github.com/runnerd/lambda-runner/engine/document"
)

// TestSchemaIsGenerated fails when docs/workflow.schema.json is not what
// go generate writes from the document's spec and the node types' withs:
// run go generate ./...
func TestSchemaIsGenerated(t *testing.T) {
	got, err := generate(&document.Workflow, specs())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, docs.WorkflowSchema) {
		t.Fatal("docs/workflow.schema.json differs from the specs (document.Workflow, each kind's With): run go generate ./...")
	}
	if !json.Valid(got) {
		t.Fatal("the schema written is not JSON")
	}
}

// TestGenerateRefusesTwoTypesOfOneName: a with whose named type differs
// from the document's type of that name is not written over it.
func TestGenerateRefusesTwoTypesOfOneName(t *testing.T) {
	withs := specs()
	withs["odd"] = &document.With{Fields: []document.Field{{Name: "n", Type: document.Type{Kind: document.Number, Def: "intOrTemplate"}}}}
	if _, err := generate(&document.Workflow, withs); err == nil {
		t.Fatal("two types named intOrTemplate were written")
	}
}

// TestExecutionSchemaRefersToWorkflow: docs/execution.schema.json holds no
// rule of the workflow document (no node, no with); it refers to the
// workflow schema by its $id, for the body's workflow and each child
// workflow. So nothing of it is generated.
func TestExecutionSchemaRefersToWorkflow(t *testing.T) {
	var s struct {
		ID         string `json:"$id"`
		Properties struct {
			Workflow struct {
				Ref string `json:"$ref"`
			} `json:"workflow"`
			Runtime struct {
				Properties struct {
					Workflows struct {
						Items struct {
							Ref string `json:"$ref"`
						} `json:"items"`
					} `json:"workflows"`
				} `json:"properties"`
			} `json:"runtime"`
		} `json:"properties"`
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(docs.ExecutionSchema, &s); err != nil {
		t.Fatal(err)
	}
	// The refs are relative to the execution schema's $id.
	const base = "https://runnerd.dev/schemas/"
	if s.ID != base+"execution-v1.json" || base+s.Properties.Workflow.Ref != document.Workflow.ID ||
		base+s.Properties.Runtime.Properties.Workflows.Items.Ref != document.Workflow.ID {
		t.Errorf("the execution schema (%s) does not refer to the workflow schema (%s) for workflow and runtime.workflows", s.ID, document.Workflow.ID)
	}
	for _, b := range [][]byte{[]byte(`"#/$defs/node"`), []byte(`"with.`), []byte(`"needs"`)} {
		if bytes.Contains(docs.ExecutionSchema, b) {
			t.Errorf("docs/execution.schema.json holds %s, a rule of the workflow document: generate it, or refer to the workflow schema", b)
		}
	}
}
