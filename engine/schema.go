package engine

import (
	"encoding/json"

	"github.com/runnerd/lambda-runner/engine/schema"
)

// compileSchema compiles a JSON Schema carried by a request (a workflow's
// input schema, a model node's json schema) with engine/schema: checked
// against draft 2020-12's rules, self-contained (no remote reference is
// ever loaded), free of reference cycles and bounded in cost.
func compileSchema(raw []byte) (*schema.Schema, error) { return schema.Compile(raw) }

// decodeJSON decodes raw into a generic value with float64 numbers, the
// representation expressions and templates work on.
func decodeJSON(raw []byte) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// asJSON is v as decodeJSON would have it.
func asJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}
