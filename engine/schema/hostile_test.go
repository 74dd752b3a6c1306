package schema

import (
	"fmt"
	"strings"
	"testing"
)

// The library goes through a schema's enum values, properties, required
// names and dependents one by one for every part of a value they apply
// to, and matches patterns in time proportional to text times program;
// a validation cannot be stopped. An enum of 20,000 strings applied to
// each item of an array of 20,000 (a 400 KB request) held the runner 117 s
// before acceptance; 8,000 properties applied to 200,000 empty objects,
// over two minutes; a pattern of 2,000 instructions, 3.3 s over 100 KB. A
// validation whose value's parts times the checks one part may take
// passes MaxChecks, or whose text times the pattern steps one byte may
// take passes MaxPatternWork (each counted level by level of the value),
// is refused before the library starts,
// whatever leads the keyword to the parts: items, properties, $ref, allOf,
// recursion, a const in every branch.
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
		{"properties of empty objects", `{"items":{"properties":{` + strings.TrimSuffix(strings.Repeat(`"p":{},`, 1), ",") + strings.Join(func() []string {
			p := make([]string, 8_000)
			for i := range p {
				p[i] = fmt.Sprintf(`,"p%d":{"type":"string"}`, i)
			}
			return p
		}(), "") + `}}}`, array(2_000, "{}"), true},
		{"required names", `{"items":{"required":[` + strings.Join(func() []string {
			r := make([]string, 5_000)
			for i := range r {
				r[i] = fmt.Sprintf(`"a%d"`, i)
			}
			return r
		}(), ",") + `]}}`, array(1_000, `{"a0":1}`), true},
		{"a long pattern over long text", `{"type":"string","pattern":"(?:[a-z]{0,50}){20}b"}`, `"` + strings.Repeat("a", 100_000) + `"`, true},
		{"a short pattern over long text", `{"type":"string","pattern":"^[a-z]+$"}`, `"` + strings.Repeat("a", 1_000_000) + `"`, false},
		{"patternProperties over many names", `{"patternProperties":{"(?:[a-z]{0,50}){20}b":{}}}`, "{" + strings.Join(func() []string {
			m := make([]string, 2_000)
			for i := range m {
				m[i] = fmt.Sprintf(`"%s%d":1`, strings.Repeat("a", 40), i)
			}
			return m
		}(), ",") + "}", true},
		{"no enum at all", `{"type":"array","items":{"type":"string"}}`, array(100_000, `"x"`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := leavesOf(t, compileT(t, tt.schema), tt.value)
			refused := strings.Contains(got, "checks (each enum") || strings.Contains(got, "steps (the bytes of its strings")
			if refused != tt.refused {
				t.Errorf("refused %v, want %v: %.300s", refused, tt.refused, got)
			}
			if !refused && got != "" {
				t.Errorf("a valid value failed: %.300s", got)
			}
		})
	}
}

// Finding the failing leaves validates members and items again at every
// level it descends: a chain 100 deep whose every level held what one
// validation may check took 27 s to detail, under MaxChecks for the first
// pass. The walk is held to the same bounds and says when it stopped.
func TestHostileDetails(t *testing.T) {
	vals := make([]string, 100)
	for i := range vals {
		vals[i] = fmt.Sprintf(`"v%05d"`, i)
	}
	s := compileT(t, `{"$defs":{"n":{"type":"object","properties":{"big":{"type":"array","items":{"enum":[`+strings.Join(vals, ",")+
		`]}},"next":{"$ref":"#/$defs/n"},"leaf":{"type":"string"}}}},"$ref":"#/$defs/n"}`)
	big := `[` + strings.TrimSuffix(strings.Repeat(`"v00099",`, 280), ",") + `]`
	chain := func(depth int) string {
		v := `{"leaf":1}`
		for range depth {
			v = `{"big":` + big + `,"next":` + v + `}`
		}
		return v
	}
	if got := leavesOf(t, s, chain(5)); !strings.HasSuffix(got, "/next/next/next/next/next/leaf: got integer, want string") {
		t.Errorf("5 deep: %.300s", got)
	}
	if got := leavesOf(t, s, chain(80)); !strings.Contains(got, "further failures were not looked for") {
		t.Errorf("80 deep: %.300s", got)
	}
}

// A pattern's program is estimated from its parse before anything
// compiles it: one pattern of 22 KB compiled for 3 s into 158 MB, and a
// schema holds a dozen such in 256 KB. The schema's patterns together
// stay within MaxPatternInsts.
func TestHostilePatternSize(t *testing.T) {
	many := func(n int, p string) string {
		m := make([]string, n)
		for i := range m {
			m[i] = fmt.Sprintf(`"%s%d":{}`, p, i)
		}
		return strings.Join(m, ",")
	}
	tests := []struct {
		name, schema, at string
	}{
		{"one large pattern", `{"properties":{"s":{"pattern":"` + strings.Repeat(`[a-z]{0,1000}`, 1677) + `"}}}`, "/properties/s/pattern"},
		{"patterns that add up", `{"patternProperties":{` + many(60, `[a-z]{0,1000}`) + `}}`, "/patternProperties/"},
		{"properties' patterns that add up", `{"properties":{` + strings.Join(func() []string {
			m := make([]string, 60)
			for i := range m {
				m[i] = fmt.Sprintf(`"p%d":{"pattern":"(?:(?:[a-z]{0,10}){10}){10}"}`, i)
			}
			return m
		}(), ",") + `}}`, "/properties/p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]byte(tt.schema))
			if err == nil || !strings.Contains(err.Error(), "instructions together") || !strings.Contains(err.Error(), tt.at) {
				t.Errorf("got %.300v\nwant the instructions' bound at %s", err, tt.at)
			}
		})
	}
	compileT(t, `{"properties":{"email":{"pattern":"^[^@\\s]+@[^@\\s]+\\.[a-z]{2,63}$"},"id":{"pattern":"^[A-Z]{3}-[0-9]{1,10}$"}},"patternProperties":{"^x-[a-z0-9-]{1,64}$":{}}}`)
}
