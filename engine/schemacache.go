package engine

import (
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/schema"
)

// schemas keeps the input schemas compiled from request text, as
// engine/lang keeps programs (see lang.Cache): a server sends the same
// workflows again, and checking and resolving a schema is a large part of
// Prepare.
//
// A compiled schema holds up to ≈180 times its text once its details are
// built (engine/schema's wrapper): 64 of 60 KB kept 679 MB. The cache holds
// what they weigh to 32 MB.
var schemas = lang.Cache[*schema.Schema]{Max: 64, MaxKey: 64 << 10, MaxBytes: 32 << 20,
	Weigh: func(key string, _ *schema.Schema) int { return 200 * len(key) }}

// compileSchemaText compiles a JSON Schema written in a request through the
// schema cache.
func compileSchemaText(raw []byte) (*schema.Schema, error) {
	return schemas.Get(string(raw), func() (*schema.Schema, error) { return compileSchema(raw) })
}
