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
	"time"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/schema"
)

// Workflow input schemas and model json schemas are compiled by
// engine/schema, which checks them and hands them to google/jsonschema-go
// as published. These tests pin what the runner relies on: draft 2020-12
// compiles and validates, and a schema naming another draft is refused; the
// draft's rules for keyword values are applied; the JSON-Schema-Test-Suite
// (draft 2020-12) passes; a schema that refers to itself without end, costs
// without bound or reaches out of the runner is an error, not a crash.

// schemaCompile compiles text as a request's schema, bypassing the cache so
// that every call compiles.
func schemaCompile(text string) (*schema.Schema, error) { return compileSchema([]byte(text)) }

// schemaValidate validates the JSON text inst against sch: nil or the
// leaves' messages, with their locations.
func schemaValidate(t *testing.T, sch *schema.Schema, inst string) error {
	t.Helper()
	v, err := decodeJSON([]byte(inst))
	if err != nil {
		t.Fatalf("instance %.40s: %v", inst, err)
	}
	d := &document.Problems{}
	if document.SchemaDetails("input", sch, v, d, nil) {
		return nil
	}
	return d.Err()
}

func TestSchemaDrafts(t *testing.T) {
	tests := []struct {
		name, schema, good, bad string
	}{
		{"2020-12 by default", `{"type":"object","properties":{"a":{"type":"integer"}}}`, `{"a":1}`, `{"a":"x"}`},
		{"2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"string"}]}`, `["x",1]`, `[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sch, err := schemaCompile(tt.schema)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			if err := schemaValidate(t, sch, tt.good); err != nil {
				t.Errorf("%s: %v, want valid", tt.good, err)
			}
			if err := schemaValidate(t, sch, tt.bad); err == nil {
				t.Errorf("%s: valid, want invalid", tt.bad)
			}
		})
	}
	// Other drafts are refused, naming the $schema: their keywords mean
	// other things (items as an array, dependencies, exclusiveMaximum as a
	// boolean).
	for _, draft := range []string{"https://json-schema.org/draft/2019-09/schema", "http://json-schema.org/draft-07/schema#",
		"http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-04/schema#", "https://example.com/meta.json"} {
		_, err := schemaCompile(`{"$schema":"` + draft + `"}`)
		if err == nil || !strings.Contains(err.Error(), "/$schema: only draft 2020-12") {
			t.Errorf("$schema %s: got %v, want a refusal at /$schema", draft, err)
		}
	}
}

// TestSchemaMetaRules: a schema that breaks draft 2020-12's rules for its
// keywords' values is refused at compile, at the keyword's place.
func TestSchemaMetaRules(t *testing.T) {
	tests := []struct{ schema, loc, want string }{
		{`{"type":5}`, "/type", "must be a type name"},
		{`{"type":"wat"}`, "/type", `"wat" is not a type`},
		{`{"type":["string","string"]}`, "/type/1", "listed twice"},
		{`{"minLength":-1}`, "/minLength", "non-negative integer"},
		{`{"minLength":1.5}`, "/minLength", "non-negative integer"},
		{`{"maxItems":3000000000}`, "/maxItems", "non-negative integer up to 2147483647"},
		{`{"maximum":"1"}`, "/maximum", "must be a number"},
		{`{"maximum":1e999}`, "/maximum", "must be a number"},
		{`{"multipleOf":0}`, "/multipleOf", "greater than 0"},
		{`{"required":[1]}`, "/required/0", "property name"},
		{`{"required":["a","a"]}`, "/required/1", "listed twice"},
		{`{"dependentRequired":{"a":"b"}}`, "/dependentRequired/a", "array of property names"},
		{`{"pattern":"("}`, "/pattern", "not a regular expression"},
		{`{"patternProperties":{"(":{}}}`, "/patternProperties/(", "not a regular expression"},
		{`{"prefixItems":{}}`, "/prefixItems", "non-empty array of schemas"},
		{`{"allOf":[]}`, "/allOf", "non-empty array of schemas"},
		{`{"items":[{}]}`, "/items", "use prefixItems"},
		{`{"properties":{"a":5}}`, "/properties/a", "an object or a boolean"},
		{`{"properties":[]}`, "/properties", "members are schemas"},
		{`{"not":"x"}`, "/not", "an object or a boolean"},
		{`{"uniqueItems":1}`, "/uniqueItems", "must be a boolean"},
		{`{"title":1}`, "/title", "must be a string"},
		{`{"enum":1}`, "/enum", "must be an array"},
		{`{"$id":"#x"}`, "/$id", "must not have a fragment"},
		{`{"$anchor":"1x"}`, "/$anchor", "must be a name"},
		{`{"$defs":{"a":{"$anchor":"x"},"b":{"$anchor":"x"}}}`, "/$defs/b/$anchor", "defined twice"},
		{`{"$ref":5}`, "/$ref", "must be a string"},
		{`{"$ref":"#/$defs/missing"}`, "/$ref", "points at no subschema"},
		{`{"$ref":"#nowhere"}`, "/$ref", "names no anchor"},
		{`{"additionalItems":{}}`, "/additionalItems", "draft 2019-09 and earlier"},
		{`{"dependencies":{}}`, "/dependencies", "draft-07 and earlier"},
		{`{"$recursiveRef":"#"}`, "/$recursiveRef", "use $dynamicRef"},
		{`{"$vocabulary":{}}`, "/$vocabulary", "custom vocabularies"},
		{`{"properties":{"a":{"properties":{"b":{"minimum":"x"}}}}}`, "/properties/a/properties/b/minimum", "must be a number"},
		{`[]`, "", "an object or a boolean"},
		{`{"a":`, "", "malformed JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			_, err := schemaCompile(tt.schema)
			var errs schema.Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("got %v, want schema.Errors", err)
			}
			e := errs[0]
			if loc := pointerOf(e.Loc); loc != tt.loc || !strings.Contains(e.Msg, tt.want) {
				t.Errorf("got %s: %s, want %s: …%s…", loc, e.Msg, tt.loc, tt.want)
			}
		})
	}
	// Through Prepare: a detail at the keyword's place under workflow.input.
	inv := prepareInvalid(t, newTestEngine(nil), reqBody(`{"input":{"properties":{"a":{"minLength":-1}}},"nodes":[]}`, ""))
	wantProblems(t, inv.Details, []problem{{"workflow.input.properties.a.minLength", []string{"invalid JSON Schema", "non-negative integer"}}}, nil)
}

// wideObject is an object of n members a0, a1, ... whose values are value.
func wideObject(n int, value string) string {
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf(`"a%d":%s`, i, value)
	}
	return "{" + strings.Join(members, ",") + "}"
}

func pointerOf(toks []string) string {
	if len(toks) == 0 {
		return ""
	}
	return "/" + strings.Join(toks, "/")
}

// TestSchemaHostile: schemas an author can write to make validation spend
// without end, crash the validator, or reach out of the runner, end in an
// error at compile or at validation; those that are fine end in their
// verdict, quickly.
func TestSchemaHostile(t *testing.T) {
	nest := func(n int, open, close string) string {
		return strings.Repeat(open, n) + "{}" + strings.Repeat(close, n)
	}
	refChain := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
		for i := range n {
			fmt.Fprintf(&b, `"d%d":{"$ref":"#/$defs/d%d"},`, i, i+1)
		}
		fmt.Fprintf(&b, `"d%d":{"type":"string"}}}`, n)
		return b.String()
	}
	fanOut := func(n int) string {
		// d0 applies d1 twice, d1 applies d2 twice, ...: 2^n subschemas.
		var b strings.Builder
		b.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
		for i := range n {
			fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
		}
		fmt.Fprintf(&b, `"d%d":{"type":"string"}}}`, n)
		return b.String()
	}
	list := func(n int, item func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = item(i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	// The library resolves a schema by reflection, which the race
	// detector slows twentyfold: the wide schema is narrower there.
	wide := 10000
	if raceDetector {
		wide = 2000
	}
	tests := []struct {
		name, schema, inst, want string // want "" means valid
	}{
		{"self reference", `{"$ref":"#"}`, `1`, "reference cycle"},
		{"reference cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `1`, "reference cycle"},
		{"cycle through allOf", `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, `{"x":1}`, "reference cycle"},
		{"cycle through anyOf", `{"$defs":{"a":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, `1`, "reference cycle"},
		{"cycle through not", `{"not":{"$ref":"#"}}`, `1`, "reference cycle"},
		{"cycle through if/then", `{"if":true,"then":{"$ref":"#"}}`, `1`, "reference cycle"},
		{"cycle through dependentSchemas", `{"dependentSchemas":{"a":{"$ref":"#"}}}`, `{"a":1}`, "reference cycle"},
		{"cycle through an anchor", `{"$defs":{"a":{"$anchor":"x","oneOf":[{"$ref":"#x"}]}},"$ref":"#x"}`, `1`, "reference cycle"},
		{"cycle through $id", `{"$defs":{"a":{"$id":"https://x.example/a","$ref":"https://x.example/a"}},"$ref":"https://x.example/a"}`, `1`, "reference cycle"},
		{"cycle through $dynamicRef", `{"$dynamicAnchor":"m","allOf":[{"$dynamicRef":"#m"}]}`, `1`, "reference cycle"},
		{"unreached cycle", `{"$defs":{"a":{"$ref":"#/$defs/a"}}}`, `1`, "reference cycle"},
		{"remote reference", `{"$ref":"https://example.com/s.json"}`, `1`, "must be self-contained"},
		{"relative remote reference", `{"$ref":"other.json#/x"}`, `1`, "must be self-contained"},
		{"remote meta-schema", `{"$schema":"https://example.com/meta.json"}`, `1`, "only draft 2020-12"},
		{"deep nesting", nest(200, `{"not":`, `}`), `1`, "nest more than 64 deep"},
		{"deep properties", nest(100, `{"properties":{"a":`, `}}`), `1`, "nest more than 64 deep"},
		{"$defs fan-out", fanOut(40), `"x"`, "more than 1000 subschemas"},
		{"fan-out through recursion", `{"allOf":[{"properties":{"x":{"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}`, `{}`, "more than 1000 subschemas"},
		{"fan-out through items", `{"anyOf":[{"items":{"$ref":"#"}},{"items":{"$ref":"#"}}]}`, `[]`, "more than 1000 subschemas"},
		{"$ref chain", refChain(500), `"x"`, ""},
		{"$ref chain, invalid", refChain(500), `1`, "got integer, want string"},
		{"long $ref chain", refChain(5000), `"x"`, "more than 1000 subschemas"},
		{"recursive tree", `{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"}}}}`, nest(60, `{"kids":[`, `]}`), ""},
		{"instance deeper than counted", `{"items":{"$ref":"#"}}`, strings.Repeat("[", 200) + strings.Repeat("]", 200), "nests more than 128 levels deep"},
		{"huge enum", `{"enum":` + list(50000, func(i int) string { return fmt.Sprint(i) }) + `}`, `-1`, "value must be one of 0, 1"},
		{"huge enum matched", `{"enum":` + list(50000, func(i int) string { return fmt.Sprint(i) }) + `}`, `49999`, ""},
		{"pathological pattern", `{"pattern":"^(a+)+$"}`, `"` + strings.Repeat("a", 100000) + `b"`, "does not match pattern"},
		{"pattern too large", `{"pattern":"((a{1000}){1000}){1000}"}`, `"a"`, "not a regular expression"},
		{"uniqueItems on a big array", `{"uniqueItems":true}`, list(100000, func(i int) string { return fmt.Sprintf(`{"a":[%d]}`, i) }), ""},
		{"uniqueItems on a big array, a repeat", `{"uniqueItems":true}`, list(100000, func(i int) string { return fmt.Sprintf(`{"a":[%d]}`, i%99999) }), "items must be unique"},
		{"keyword in another case", `{"$Ref":"#"}`, `1`, "keywords are case-sensitive"},
		{"wide schema, every member failing", `{"properties":` + wideObject(wide, `{"type":"string"}`) + "}", wideObject(wide, "1"), "got integer, want string"},
		{"many failing members", `{"additionalProperties":{"type":"string"}}`, wideObject(5000, "1"), "got integer, want string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			sch, err := schemaCompile(tt.schema)
			if err == nil {
				err = schemaValidate(t, sch, tt.inst)
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %.300v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %.300v, want an error containing %q", err, tt.want)
			}
			if d := time.Since(start); d > costSlack(10*time.Second) {
				t.Errorf("took %v", d)
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
// compiles and judges every case as the suite says, or uses what the runner
// refuses and is refused at compile. The only such groups are those whose
// schema refers to a document outside itself (refRemote.json and others:
// localhost:1234, the meta-schema, relative names the suite serves), as the
// runner refuses every remote reference.
func TestSchemaSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	files, err := filepath.Glob(filepath.Join(schemaSuiteDir(t), "*.json"))
	if err != nil || len(files) < 40 {
		t.Fatalf("suite files: %d (%v)", len(files), err)
	}
	cases, refused := 0, 0
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
					if !strings.Contains(err.Error(), "is not loaded: schemas must be self-contained") {
						t.Errorf("%s: compile: %v", g.Description, err)
					}
					refused += len(g.Tests)
					continue
				}
				for _, c := range g.Tests {
					cases++
					err := schemaValidate(t, sch, string(c.Data))
					if (err == nil) != c.Valid {
						t.Errorf("%s / %s: valid %t, want %t (%v)", g.Description, c.Description, err == nil, c.Valid, err)
					}
				}
			}
		})
	}
	if cases < 1000 || refused > 60 {
		t.Errorf("%d cases run, %d refused", cases, refused)
	}
	t.Logf("%d cases pass, %d refused at compile (remote references)", cases, refused)
}
