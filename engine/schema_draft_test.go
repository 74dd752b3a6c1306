package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Workflow input schemas and model json schemas are compiled by
// santhosh-tekuri/jsonschema as published. These tests pin what the runner
// relies on: every draft a schema may name compiles, validates and has its
// meta-schema applied; the JSON-Schema-Test-Suite (draft 2020-12) passes;
// a schema that refers to itself without end is an error, not a crash;
// remote references are never loaded.

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

func TestSchemaDrafts(t *testing.T) {
	for _, tt := range schemaDrafts {
		t.Run(tt.name, func(t *testing.T) {
			sch, err := schemaCompile(tt.schema)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			for _, c := range []struct {
				inst string
				ok   bool
			}{{tt.good, true}, {tt.bad, false}} {
				v, err := schemaValueRaw([]byte(c.inst))
				if err != nil {
					t.Fatalf("instance %s: %v", c.inst, err)
				}
				if err := sch.Validate(v); (err == nil) != c.ok {
					t.Errorf("%s: valid %t, want %t (%v)", c.inst, err == nil, c.ok, err)
				}
			}
			var verr *jsonschema.SchemaValidationError
			if _, err := schemaCompile(tt.invalid); !errors.As(err, &verr) {
				t.Errorf("invalid schema %s: got %v, want a meta-schema validation error", tt.invalid, err)
			}
		})
	}
}

// TestSchemaHostile: schemas an author can write to make validation spend
// without end, or reach out of the runner, end in an error.
func TestSchemaHostile(t *testing.T) {
	tests := []struct {
		name, schema, inst, want string
	}{
		{"self reference", `{"$ref":"#"}`, `1`, "reference cycle"},
		{"reference cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `1`, "reference cycle"},
		{"cycle through allOf", `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, `{"x":1}`, "reference cycle"},
		{"remote reference", `{"$ref":"https://example.com/s.json"}`, `1`, "must be self-contained"},
		{"remote meta-schema", `{"$schema":"https://example.com/meta.json"}`, `1`, "must be self-contained"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sch, err := schemaCompile(tt.schema)
			if err == nil {
				v, _ := schemaValueRaw([]byte(tt.inst))
				err = sch.Validate(v)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// schemaSuiteDir is where the JSON-Schema-Test-Suite's draft 2020-12 files
// are on this machine: the copy shipped in google/jsonschema-go's module
// (linked through the MCP SDK, so in the module graph), located with the go
// command rather than copied into this repository.
func schemaSuiteDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/google/jsonschema-go").Output()
	if err != nil {
		t.Fatalf("go mod download github.com/google/jsonschema-go: %v", err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download: no Dir in %s (%v)", out, err)
	}
	return filepath.Join(m.Dir, "jsonschema", "testdata", "draft2020-12")
}

// TestSchemaSuite runs the JSON-Schema-Test-Suite (draft 2020-12) through
// the runner's own compileSchema and validation: every group's schema
// compiles and judges every case as the suite says. Groups whose schema
// refers to a remote document (refRemote.json, localhost:1234) are refused
// at compile, as the runner refuses every remote reference.
func TestSchemaSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	files, err := filepath.Glob(filepath.Join(schemaSuiteDir(t), "*.json"))
	if err != nil || len(files) < 40 {
		t.Fatalf("suite files: %d (%v)", len(files), err)
	}
	cases := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var groups []struct {
				Description string
				Schema      json.RawMessage
				Tests       []struct {
					Description string
					Data        json.RawMessage
					Valid       bool
				}
			}
			if err := json.Unmarshal(raw, &groups); err != nil {
				t.Fatal(err)
			}
			for _, g := range groups {
				sch, err := schemaCompile(string(g.Schema))
				if err != nil {
					if strings.Contains(err.Error(), "must be self-contained") && strings.Contains(string(g.Schema), "localhost:1234") {
						continue
					}
					t.Errorf("%s: compile: %v", g.Description, err)
					continue
				}
				for _, c := range g.Tests {
					cases++
					v, err := schemaValueRaw(c.Data)
					if err != nil {
						t.Fatalf("%s / %s: %v", g.Description, c.Description, err)
					}
					if err := sch.Validate(v); (err == nil) != c.Valid {
						t.Errorf("%s / %s: valid %t, want %t (%v)", g.Description, c.Description, err == nil, c.Valid, err)
					}
				}
			}
		})
	}
	if cases < 1000 {
		t.Errorf("only %d cases run", cases)
	}
	t.Logf("%s", fmt.Sprint(cases, " cases"))
}
