package document_test

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/runnerd/lambda-runner/docs"
	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/internal/doccorpus"
	_ "github.com/runnerd/lambda-runner/engine/nodes"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The document checks (check.go, rules.go; each with from its spec, with.go) and the published
// schema (docs/workflow.schema.json, run by the JSON Schema library) must
// agree: same decision, same details (paths and messages, in order, the
// checks' "did you mean" aside), same paths covered for the later checks.

var (
	dsLibOnce   sync.Once
	dsLibSchema *jsonschema.Schema
	dsLibErr    error
)

// dsLibrarySchema compiles docs/workflow.schema.json with the library.
func dsLibrarySchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	dsLibOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(docs.WorkflowSchema))
		if err != nil {
			dsLibErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("workflow.schema.json", doc); err != nil {
			dsLibErr = err
			return
		}
		dsLibSchema, dsLibErr = c.Compile("workflow.schema.json")
	})
	if dsLibErr != nil {
		t.Fatalf("compile docs/workflow.schema.json: %v", dsLibErr)
	}
	return dsLibSchema
}

// dsCompare runs both checks over raw; ok is false when raw is not JSON.
func dsCompare(t testing.TB, raw []byte) (agree bool, lib, own document.Outcome, ok bool) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return true, lib, own, false
	}
	doc, err := document.Decode(raw, 0)
	if err != nil {
		t.Fatalf("library decodes %s, Decode does not: %v", raw, err)
	}
	verr, panicked := dsLibraryValidate(t, inst)
	if panicked {
		// The library compares a minimum with a number math/big cannot
		// parse by dereferencing nil: there is no verdict to agree with.
		return true, lib, own, false
	}
	if verr != nil {
		var isVE bool
		if lib, isVE = document.LibraryReport("workflow", verr); !isVE {
			t.Fatalf("validation error %T: %v", verr, verr)
		}
	}
	own = document.OwnReport("workflow", doc, engine.New(engine.Limits{}).WithSpecs())
	agree = slices.Equal(lib.Details, own.Details) && slices.Equal(lib.Covered, own.Covered)
	return agree, lib, own, true
}

func dsLibraryValidate(t testing.TB, inst any) (err error, panicked bool) {
	sch := dsLibrarySchema(t)
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return sch.Validate(inst), false
}

func dsCheck(t testing.TB, name string, raw []byte) bool {
	t.Helper()
	agree, lib, own, ok := dsCompare(t, raw)
	if ok && !agree {
		t.Errorf("%s: %s\nlibrary: %q\n         covers %q\nchecks:  %q\n         covers %q", name, raw, lib.Details, lib.Covered, own.Details, own.Covered)
		return false
	}
	return true
}

func TestDocSchemaAgreesWithLibrary(t *testing.T) {
	corpus := doccorpus.Harvest(t, "..")
	for _, d := range doccorpus.FullNodes() {
		corpus[d] = []byte(d)
	}
	bases := slices.Sorted(maps.Keys(corpus))
	n, failures := 0, 0
	for _, k := range bases {
		dsCheck(t, "harvested", corpus[k])
		n++
	}
	// Mutations of the documents that exercise every rule; the harvested
	// ones are many and alike, so a sample of them.
	var seeds []string
	seeds = append(seeds, doccorpus.FullNodes()...)
	for i, k := range bases {
		if i%7 == 0 && len(k) < 2000 {
			seeds = append(seeds, k)
		}
	}
	if testing.Short() {
		seeds = seeds[:16]
	}
	for _, s := range seeds {
		for _, m := range doccorpus.Mutations([]byte(s)) {
			n++
			if !dsCheck(t, "mutation", m) {
				// The first disagreements say enough.
				if failures++; failures > 20 {
					t.FailNow()
				}
			}
		}
	}
	t.Logf("%d documents compared", n)
}

// TestDocSchemaCatchesDisagreement makes sure the comparison can fail: a
// document the checks judge as the library does, compared against a
// deliberately different report.
func TestDocSchemaCatchesDisagreement(t *testing.T) {
	raw := []byte(`{"nodes":[{"id":"a","type":"set","timeoutMs":0}]}`)
	agree, lib, own, ok := dsCompare(t, raw)
	if !ok || !agree || len(lib.Details) != 1 || !strings.Contains(own.Details[0], "workflow.nodes[0].timeoutMs: minimum") {
		t.Fatalf("agree=%v lib=%q own=%q", agree, lib.Details, own.Details)
	}
	valid, err := document.Decode([]byte(`{"nodes":[]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	other := document.OwnReport("workflow", valid, engine.New(engine.Limits{}).WithSpecs())
	if slices.Equal(other.Details, lib.Details) {
		t.Fatal("a valid document's report equals an invalid one's")
	}
}

func FuzzDocSchema(f *testing.F) {
	for _, d := range doccorpus.FullNodes() {
		f.Add([]byte(d))
		for i, m := range doccorpus.Mutations([]byte(d)) {
			if i%23 == 0 {
				f.Add(m)
			}
		}
	}
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"nodes":[{"id":"a","type":"set","timeoutMs":1e-9999999,"needs":[1e9999999,1e9999999],"retry":{"factor":1e-9999999}}],"version":1e9999999}`))
	f.Add([]byte(`{"nodes":[{"id":"a","needs":["b","c","b"]}],"version":1.0}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 1<<16 {
			return
		}
		dsCheck(t, "fuzz", raw)
	})
}
