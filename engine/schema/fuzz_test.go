package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// FuzzCompile: any text either compiles or is refused with Errors, and a
// compiled schema validates any value to a verdict; nothing panics (the
// recover in Compile and Validate would turn a panic into a message this
// test looks for) and nothing overflows the stack (a crash).
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`{}`, `true`, `false`, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
		`{"$id":"https://x.example/r","$defs":{"n":{"$anchor":"n","items":{"$ref":"#n"}}},"$ref":"#n"}`,
		`{"$dynamicAnchor":"m","properties":{"k":{"$dynamicRef":"#m"}}}`,
		`{"anyOf":[{"prefixItems":[{"const":1}]},{"unevaluatedItems":false}]}`,
		`{"if":{"minimum":0},"then":{"multipleOf":2},"else":{"enum":[null]}}`,
		`{"dependentSchemas":{"a":{"required":["b"]}},"propertyNames":{"pattern":"^[a-z]+$"}}`,
		`{"$ref":"#/properties/a","properties":{"a":{"type":"integer"}}}`,
		`{"$defs":{"x":{"$id":"sub.json","$defs":{"y":{"type":"string"}}}},"$ref":"sub.json#/$defs/y"}`,
	} {
		f.Add(s, `{"a":[1,"x",{"b":null}]}`)
	}
	f.Fuzz(func(t *testing.T, schema, inst string) {
		tm := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("HANG schema=%q inst=%q", schema, inst)) })
		defer tm.Stop()
		s, err := Compile([]byte(schema))
		if err != nil {
			if _, ok := err.(Errors); !ok {
				t.Fatalf("error %T: %v", err, err)
			}
			if strings.Contains(err.Error(), "could not be compiled") {
				t.Fatalf("panic in compile: %v", err)
			}
			return
		}
		var v any
		if json.Unmarshal([]byte(inst), &v) != nil {
			v = inst
		}
		for _, l := range s.Validate(v) {
			if strings.Contains(l.Msg, "could not be validated") {
				t.Fatalf("panic in validate: %s", l.Msg)
			}
		}
	})
}
