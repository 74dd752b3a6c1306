package engine

import (
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A server delegates the same workflows again and again, and compiling
// their expressions (expr builds a fresh configuration for every Compile)
// and their input schema (checked against the draft's meta-schema) was half
// the time from request to accepted. What Prepare compiles from request text
// is therefore kept, keyed by that text: compiled programs and schemas are
// immutable and safe for concurrent use, and the checks that depend on where
// an expression sits (names, upstream nodes) still run on every request.
//
// The caches are bounded in entries and in key size, and emptied when full,
// so that callers sending ever-new documents cost a fixed amount of memory.
var (
	programs = compileCache[*compiled]{max: 1024, maxKey: 4 << 10}
	schemas  = compileCache[*jsonschema.Schema]{max: 64, maxKey: 64 << 10}
)

// compileProgram compiles an expression, budget patch included (see
// exprbudget.go), through the program cache.
func compileProgram(src string) (*compiled, error) {
	return programs.get(src, func() (*compiled, error) { return compileBudgeted(src) })
}

// compileSchemaText compiles a JSON Schema written in a request through the
// schema cache.
func compileSchemaText(raw []byte) (*jsonschema.Schema, error) {
	return schemas.get(string(raw), func() (*jsonschema.Schema, error) {
		v, err := schemaValueRaw(raw)
		if err != nil {
			return nil, err
		}
		return compileSchema(v)
	})
}

// compileCache memoizes successful compilations by source text.
type compileCache[V any] struct {
	max    int // entries kept before the cache is emptied
	maxKey int // longer sources are compiled but not kept

	mu sync.Mutex
	m  map[string]V
}

func (c *compileCache[V]) get(key string, compile func() (V, error)) (V, error) {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := compile()
	if err != nil || len(key) > c.maxKey {
		return v, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[string]V, c.max)
	}
	c.m[key] = v
	c.mu.Unlock()
	return v, nil
}
