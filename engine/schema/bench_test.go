package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func wide(n int, member string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"a%d":%s`, i, member)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// BenchmarkCompile: a small input schema and a wide one (10,000
// properties, 300 kB).
func BenchmarkCompile(b *testing.B) {
	for _, bc := range []struct{ name, schema string }{
		{"small", `{"type":"object","required":["name"],"properties":{"name":{"type":"string","minLength":1},"tags":{"type":"array","items":{"enum":["a","b"]}}}}`},
		{"wide", `{"properties":` + wide(10000, `{"type":"string"}`) + `}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Compile([]byte(bc.schema)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidate: a valid value, and every member of a wide value
// failing (the details; a new Schema each time, so the wrapper is built).
func BenchmarkValidate(b *testing.B) {
	schema := []byte(`{"properties":` + wide(10000, `{"type":"string"}`) + `}`)
	var good, bad any
	json.Unmarshal([]byte(wide(10000, `"x"`)), &good)
	json.Unmarshal([]byte(wide(10000, `1`)), &bad)
	s, _ := Compile(schema)
	b.Run("valid", func(b *testing.B) {
		for b.Loop() {
			if s.Validate(good) != nil {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("details", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			s, _ := Compile(schema)
			b.StartTimer()
			if len(s.Validate(bad)) != maxLeaves {
				b.Fatal("leaves")
			}
		}
	})
}
