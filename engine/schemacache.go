package engine

import (
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemas keeps the input schemas compiled from request text, as
// engine/lang keeps programs (see lang.Cache): a server sends the same
// workflows again, and checking a schema against its draft's meta-schema
// was a large part of Prepare.
var schemas = lang.Cache[*jsonschema.Schema]{Max: 64, MaxKey: 64 << 10}

// compileSchemaText compiles a JSON Schema written in a request through the
// schema cache.
func compileSchemaText(raw []byte) (*jsonschema.Schema, error) {
	return schemas.Get(string(raw), func() (*jsonschema.Schema, error) {
		v, err := schemaValueRaw(raw)
		if err != nil {
			return nil, err
		}
		return compileSchema(v)
	})
}
