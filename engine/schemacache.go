package engine

import (
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/schema"
)

// schemas keeps the input schemas compiled from request text, as
// engine/lang keeps programs (see lang.Cache): a server sends the same
// workflows again, and checking and resolving a schema is a large part of
// Prepare.
var schemas = lang.Cache[*schema.Schema]{Max: 64, MaxKey: 64 << 10}

// compileSchemaText compiles a JSON Schema written in a request through the
// schema cache.
func compileSchemaText(raw []byte) (*schema.Schema, error) {
	return schemas.Get(string(raw), func() (*schema.Schema, error) { return compileSchema(raw) })
}
