package schema

import (
	"fmt"
	"strings"
	"testing"
)

// The library compares a value with an enum's values one by one, and a
// validation cannot be stopped: an enum of 20,000 strings applied to each
// item of an array of 20,000 (a 400 KB request) held the runner 117 s
// before acceptance. A validation whose value's parts times the values
// one part may be compared with passes MaxComparisons is refused before
// the library starts, whatever leads the enum to the parts: items,
// properties, $ref, allOf, recursion, a const in every branch.
func TestHostileComparisons(t *testing.T) {
	enum := func(n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf(`"v%05d"`, i)
		}
		return "[" + strings.Join(vals, ",") + "]"
	}
	array := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	consts := make([]string, 400)
	for i := range consts {
		consts[i] = fmt.Sprintf(`{"const":%d}`, i)
	}
	tests := []struct {
		name, schema, value string
		refused             bool
	}{
		{"items, refused", `{"type":"array","items":{"enum":` + enum(20_000) + `}}`, array(20_000, `"v19999"`), true},
		{"items, within", `{"type":"array","items":{"enum":` + enum(100) + `}}`, array(10_000, `"v00099"`), false},
		{"through $ref", `{"$defs":{"e":{"enum":` + enum(5_000) + `}},"type":"object","additionalProperties":{"$ref":"#/$defs/e"}}`,
			"{" + strings.Join(func() []string {
				m := make([]string, 2_000)
				for i := range m {
					m[i] = fmt.Sprintf(`"k%d":"v00001"`, i)
				}
				return m
			}(), ",") + "}", true},
		{"allOf repeating one", `{"$defs":{"e":{"enum":` + enum(500) + `}},"items":{"allOf":[` + strings.TrimSuffix(strings.Repeat(`{"$ref":"#/$defs/e"},`, 50), ",") + `]}}`,
			array(200, `"v00001"`), true},
		{"anyOf of consts", `{"items":{"anyOf":[` + strings.Join(consts, ",") + `]}}`, array(20_000, "399"), true},
		{"recursion", `{"$defs":{"t":{"type":"array","items":{"anyOf":[{"enum":` + enum(1_000) + `},{"$ref":"#/$defs/t"}]}}},"$ref":"#/$defs/t"}`,
			array(50, array(100, `"v00001"`)), true},
		{"no enum at all", `{"type":"array","items":{"type":"string"}}`, array(100_000, `"x"`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := leavesOf(t, compileT(t, tt.schema), tt.value)
			refused := strings.Contains(got, "comparisons one validation may make")
			if refused != tt.refused {
				t.Errorf("refused %v, want %v: %.300s", refused, tt.refused, got)
			}
			if !refused && got != "" {
				t.Errorf("a valid value failed: %.300s", got)
			}
		})
	}
}
