package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/runnerd/lambda-runner/docs"
)

// TestSchemaIsGenerated fails when docs/workflow.schema.json is not what
// go generate writes from the node types' specs: run go generate ./...
func TestSchemaIsGenerated(t *testing.T) {
	got, err := generate(docs.WorkflowSchema, specs())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, docs.WorkflowSchema) {
		t.Fatal("docs/workflow.schema.json differs from the node types' specs (each kind's With): run go generate ./...")
	}
	// Generating again changes nothing.
	again, err := generate(got, specs())
	if err != nil || !bytes.Equal(again, got) {
		t.Fatalf("a second run changed the schema (%v)", err)
	}
}

// TestExecutionSchemaRefersToWith: docs/execution.schema.json holds no
// with of its own (it refers to the workflow schema), so there is nothing
// of it to generate.
func TestExecutionSchemaRefersToWith(t *testing.T) {
	b, err := os.ReadFile("../../docs/execution.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"with.`)) {
		t.Fatal("docs/execution.schema.json defines a with: generate it too")
	}
}
