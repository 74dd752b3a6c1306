// Package docs holds the published artifacts that code depends on, so the
// published copy and the one in force are the same bytes.
package docs

// workflow.schema.json is written whole from the specs the document is
// checked by: the document's (engine/document/spec.go) and each node type's
// with (Engine.WithSpecs).
//go:generate go run ../internal/schemagen

import _ "embed"

// WorkflowSchema is the JSON Schema of the workflow document, generated
// from the spec request validation walks, so that it says what the
// runner enforces.
//
//go:embed workflow.schema.json
var WorkflowSchema []byte

// ExecutionSchema is the JSON Schema of a whole request body, for editors;
// it refers to the workflow schema by its $id.
//
//go:embed execution.schema.json
var ExecutionSchema []byte
