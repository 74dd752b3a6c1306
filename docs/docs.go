// Package docs holds the published artifacts that code depends on, so the
// published copy and the one in force are the same bytes.
package docs

// The with of each node type in workflow.schema.json is written from the
// node types' specs (engine/with_specs.go).
//go:generate go run ../internal/schemagen

import _ "embed"

// WorkflowSchema is the JSON Schema of the workflow document, the single
// source of truth that request validation uses.
//
//go:embed workflow.schema.json
var WorkflowSchema []byte

// ExecutionSchema is the JSON Schema of a whole request body, for editors;
// it refers to the workflow schema by its $id.
//
//go:embed execution.schema.json
var ExecutionSchema []byte
