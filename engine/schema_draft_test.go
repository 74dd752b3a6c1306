package engine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The jsonschema library is a patched copy (third_party/jsonschema) that
// compiles a draft's meta-schemas on the draft's first use instead of in its
// package init. These tests pin that down: a cold process pays nothing for
// drafts it does not use, every draft still works when a schema names it,
// and concurrent first uses are safe.

// schemaFreshEnv marks a child process started by schemaFresh.
const schemaFreshEnv = "RUNNER_TEST_SCHEMA_FRESH"

// schemaFresh runs the test named name alone in a new process of this test
// binary (with the race detector when the binary has it), so that it meets
// the library as a cold process does; it fails t if the child fails.
func schemaFresh(t *testing.T, name string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), schemaFreshEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("fresh process: %v\n%s", err, out)
	}
}

// schemaDrafts are schemas naming each draft: a valid one with an instance it
// accepts and one it rejects, and one the draft's meta-schema rejects (so
// the meta-schema must have been compiled and used).
var schemaDrafts = []struct {
	name, schema, good, bad, invalid string
}{
	{"2020-12 by default",
		`{"type":"object","properties":{"a":{"type":"integer"}}}`,
		`{"a":1}`, `{"a":"x"}`, `{"type":5}`},
	{"2020-12",
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"string"}]}`,
		`["x",1]`, `[1]`, `{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":{}}`},
	{"2019-09",
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","dependentRequired":{"a":["b"]}}`,
		`{"a":1,"b":2}`, `{"a":1}`, `{"$schema":"https://json-schema.org/draft/2019-09/schema","dependentRequired":{"a":[1]}}`},
	{"draft-07",
		`{"$schema":"http://json-schema.org/draft-07/schema#","if":{"required":["a"]},"then":{"required":["b"]}}`,
		`{"a":1,"b":2}`, `{"a":1}`, `{"$schema":"http://json-schema.org/draft-07/schema#","minLength":-1}`},
	{"draft-06",
		`{"$schema":"http://json-schema.org/draft-06/schema#","contains":{"const":3}}`,
		`[1,3]`, `[1,2]`, `{"$schema":"http://json-schema.org/draft-06/schema#","contains":5}`},
	{"draft-04",
		`{"$schema":"http://json-schema.org/draft-04/schema#","maximum":3,"exclusiveMaximum":true}`,
		`2`, `3`, `{"$schema":"http://json-schema.org/draft-04/schema#","exclusiveMaximum":3}`},
}

// schemaCompile compiles text as a request's schema, bypassing the cache so
// that every call compiles.
func schemaCompile(text string) (*jsonschema.Schema, error) {
	v, err := schemaValueRaw([]byte(text))
	if err != nil {
		return nil, err
	}
	return compileSchema(v)
}

// schemaDraftCheck compiles and applies one case of schemaDrafts.
func schemaDraftCheck(schema, good, bad, invalid string) error {
	sch, err := schemaCompile(schema)
	if err != nil {
		return fmt.Errorf("compile: %v", err)
	}
	for _, c := range []struct {
		inst string
		ok   bool
	}{{good, true}, {bad, false}} {
		v, err := schemaValueRaw([]byte(c.inst))
		if err != nil {
			return fmt.Errorf("instance %s: %v", c.inst, err)
		}
		if err := sch.Validate(v); (err == nil) != c.ok {
			return fmt.Errorf("%s: valid %t, want %t (%v)", c.inst, err == nil, c.ok, err)
		}
	}
	var verr *jsonschema.SchemaValidationError
	if _, err := schemaCompile(invalid); !errors.As(err, &verr) {
		return fmt.Errorf("invalid schema %s: got %v, want a meta-schema validation error", invalid, err)
	}
	return nil
}

func TestSchemaDrafts(t *testing.T) {
	for _, tt := range schemaDrafts {
		t.Run(tt.name, func(t *testing.T) {
			if err := schemaDraftCheck(tt.schema, tt.good, tt.bad, tt.invalid); err != nil {
				t.Error(err)
			}
		})
	}
}

// The library's package init allocates almost nothing: upstream's compiled
// the meta-schemas of five drafts there (megabytes, milliseconds).
func TestSchemaLibraryInitCompilesNothing(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^init github\.com/santhosh-tekuri/jsonschema/v6 @.* ms clock, (\d+) bytes, (\d+) allocs$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no init line for the library in\n%s", out)
	}
	bytes, _ := strconv.Atoi(string(m[1]))
	allocs, _ := strconv.Atoi(string(m[2]))
	if bytes > 64<<10 || allocs > 1000 {
		t.Errorf("library init: %d bytes, %d allocs; want ≤ 64 KiB and ≤ 1000 (no meta-schema compiled)", bytes, allocs)
	}
}

// A workflow without a schema never compiles a meta-schema, and the first
// schema compiles only its own draft's: in a cold process the first 2020-12
// schema pays for the 2020-12 meta-schemas, a second one does not, and
// draft-07 is compiled on its own first use.
func TestSchemaDraftsLoadOnFirstUse(t *testing.T) {
	if os.Getenv(schemaFreshEnv) == "" {
		schemaFresh(t, t.Name())
		return
	}
	e := New(DefaultLimits())
	if _, sum := runBody(t, e, `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`); sum.Status != protocol.StatusCompleted {
		t.Fatalf("trivial workflow: %+v", sum)
	}
	mallocs := func(schema string) uint64 {
		t.Helper()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := schemaCompile(schema); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	first := mallocs(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	second := mallocs(`{"type":"object","properties":{"b":{"type":"string"}}}`)
	draft7 := mallocs(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`)
	draft7Again := mallocs(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"array"}`)
	t.Logf("allocations: first 2020-12 schema %d, second %d; first draft-07 %d, second %d", first, second, draft7, draft7Again)
	if first < 10*second {
		t.Errorf("first 2020-12 schema after a trivial workflow: %d allocations, second %d: the trivial workflow compiled the meta-schema already", first, second)
	}
	if draft7 < 10*draft7Again {
		t.Errorf("first draft-07 schema: %d allocations, second %d: draft-07 was not compiled on its first use", draft7, draft7Again)
	}
}

// Several requests naming drafts for the first time at once each get a
// fully compiled meta-schema (run under -race, the child has the detector).
func TestSchemaDraftsConcurrentFirstUse(t *testing.T) {
	if os.Getenv(schemaFreshEnv) == "" {
		schemaFresh(t, t.Name())
		return
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(schemaDrafts))
	for range 4 {
		for _, tt := range schemaDrafts {
			wg.Go(func() {
				<-start
				if err := schemaDraftCheck(tt.schema, tt.good, tt.bad, tt.invalid); err != nil {
					errs <- fmt.Errorf("%s: %w", tt.name, err)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
