package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func compileT(t *testing.T, text string) *Schema {
	t.Helper()
	s, err := Compile([]byte(text))
	if err != nil {
		t.Fatalf("compile %s: %v", text, err)
	}
	return s
}

func leavesOf(t *testing.T, s *Schema, inst string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(inst), &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range s.Validate(v) {
		line := "/" + strings.Join(l.Loc, "/") + ": " + l.Msg
		if l.Members != nil {
			line += fmt.Sprintf(" %q", l.Members)
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// TestValidateDetails: every failing leaf at its instance location, in
// the same order every time, where the library alone gives one error.
func TestValidateDetails(t *testing.T) {
	person := `{"type":"object","required":["name","age"],"additionalProperties":false,
		"properties":{"name":{"type":"string","minLength":1},"age":{"type":"integer","minimum":0},
		"tags":{"type":"array","items":{"enum":["a","b"]},"uniqueItems":true},
		"home":{"$ref":"#/$defs/place"}},
		"$defs":{"place":{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["zip"]}}}`
	tests := []struct{ name, schema, inst, want string }{
		{"valid", person, `{"name":"a","age":1}`, ""},
		{"every field", person, `{"name":"","age":-1,"tags":["a","c","a"],"home":{"zip":"x"},"extra":1,"more":2}`, strings.Join([]string{
			`/age: minimum: got -1, want 0`,
			`/home/zip: 'x' does not match pattern '^[0-9]{5}$'`,
			`/name: minLength: got 0, want 1`,
			`/tags: items must be unique`,
			`/tags/1: value must be one of "a", "b"`,
			`/: additional properties 'extra', 'more' not allowed ["extra" "more"]`,
		}, "\n")},
		{"missing members", person, `{"home":{}}`, strings.Join([]string{
			`/: missing properties 'name', 'age' ["name" "age"]`,
			`/home: missing property 'zip' ["zip"]`,
		}, "\n")},
		{"wrong type at the root", person, `[]`, `/: got array, want object`},
		{"anyOf: every alternative", `{"anyOf":[{"type":"string"},{"properties":{"a":{"type":"integer"}}}]}`, `{"a":"x"}`,
			"/: got object, want string\n/a: got string, want integer"},
		{"oneOf: two match", `{"oneOf":[{"type":"integer"},{"minimum":0}]}`, `1`, `/: valid against 2 alternatives of oneOf, want exactly one`},
		{"not", `{"not":{"type":"string"}}`, `"x"`, `/: must not be valid against not`},
		{"if/then", `{"if":{"required":["a"]},"then":{"required":["b"]}}`, `{"a":1}`, `/: missing property 'b' ["b"]`},
		{"dependentRequired", `{"dependentRequired":{"a":["b"]}}`, `{"a":1}`, `/: missing property 'b', required by 'a' ["b"]`},
		{"contains", `{"contains":{"type":"string"},"minContains":2}`, `["x",1]`, `/: 1 items match contains, want at least 2`},
		{"prefixItems", `{"prefixItems":[{"type":"string"}],"items":{"type":"integer"}}`, `[1,"x"]`, "/0: got integer, want string\n/1: got string, want integer"},
		{"propertyNames", `{"propertyNames":{"maxLength":2}}`, `{"abc":1}`, `/: property name 'abc' is not allowed by propertyNames`},
		{"false", `{"properties":{"a":false}}`, `{"a":1}`, `/a: no value is allowed here`},
		{"unevaluatedProperties: one leaf", `{"unevaluatedProperties":false}`, `{"a":1}`, `/: does not match the schema at #: unevaluatedProperties`},
		{"a long value is cut", `{"pattern":"^a"}`, `"` + strings.Repeat("b", 1000) + `"`, `/: '` + strings.Repeat("b", 40) + `…' does not match pattern '^a'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := compileT(t, tt.schema)
			for range 3 { // the same every time
				if got := leavesOf(t, s, tt.inst); got != tt.want {
					t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
				}
			}
		})
	}
}

// TestValidateDynamic: a schema with $dynamicRef is validated by the
// library as a whole, its failure one leaf at the root.
func TestValidateDynamic(t *testing.T) {
	s := compileT(t, `{"$dynamicAnchor":"node","type":"object","properties":{"kids":{"type":"array","items":{"$dynamicRef":"#node"}}}}`)
	if got := leavesOf(t, s, `{"kids":[{"kids":[1]}]}`); !strings.HasPrefix(got, "/: does not match the schema") {
		t.Errorf("got %s", got)
	}
	if got := leavesOf(t, s, `{"kids":[{"kids":[]}]}`); got != "" {
		t.Errorf("got %s, want valid", got)
	}
}

func TestValidateConcurrent(t *testing.T) {
	s := compileT(t, `{"properties":{"a":{"type":"string"}}}`)
	done := make(chan string)
	for range 8 {
		go func() { done <- leavesOf(t, s, `{"a":1}`) }()
	}
	for range 8 {
		if got := <-done; got != "/a: got integer, want string" {
			t.Errorf("got %s", got)
		}
	}
}

// TestKeywordsCoverLibrary: every member name the library decodes into
// its Schema is a keyword the checks know, so none reaches the library
// unchecked (it matches names case-insensitively, as encoding/json does).
func TestKeywordsCoverLibrary(t *testing.T) {
	typ := reflect.TypeFor[jsonschema.Schema]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if !keywords[name] {
			t.Errorf("the library decodes %q, which the checks do not know", name)
		}
	}
	for _, k := range []string{"$Ref", "TYPE", "Properties", "propertieſ", "ALLOF", "$DEFS"} {
		if _, err := Compile([]byte(`{"` + k + `":{}}`)); err == nil || !strings.Contains(err.Error(), "case-sensitive") {
			t.Errorf("%s: got %v, want a refusal", k, err)
		}
	}
}

// TestCompileKeepsNoText: a compiled schema does not alias the text it
// was compiled from (a request's body, reused or kept alive otherwise):
// the text overwritten after Compile, its details still come from the
// schema as written.
func TestCompileKeepsNoText(t *testing.T) {
	text := []byte(`{"type":"object","properties":{"n":{"type":"integer","minimum":3}},"required":["n"]}`)
	s, err := Compile(text)
	if err != nil {
		t.Fatal(err)
	}
	copy(text, strings.Repeat(" ", len(text)))
	if got, want := leavesOf(t, s, `{"n":1}`), "/n: minimum: got 1, want 3"; got != want {
		t.Errorf("leaves = %q, want %q", got, want)
	}
	if got, want := leavesOf(t, s, `{}`), `/: missing property 'n' ["n"]`; got != want {
		t.Errorf("leaves = %q, want %q", got, want)
	}
}
