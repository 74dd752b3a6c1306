package lang

import (
	"encoding/json"
	"regexp/syntax"
	"strings"
	"testing"
)

// jsonSize is exact for everything but numbers (an upper bound), with and
// without toJSON's indentation.
func TestJSONSizeMatchesTheEncoder(t *testing.T) {
	for _, src := range []string{
		`null`, `true`, `"x"`, `"<a href=\"&\">\u2028é\n\t"`, `[]`, `{}`, `[[]]`, `[[[[[]]]]]`,
		`{"a":{"b":[null,true,"x"]},"c":[]}`, `[{"k":"v"},{"k2":[[],{}]}]`, `[1,2.5,-3e10]`,
		"[" + strings.Repeat(`"s",`, 50) + `"e"]`, strings.Repeat("[", 200) + strings.Repeat("]", 200),
	} {
		var v any
		if err := json.Unmarshal([]byte(src), &v); err != nil {
			t.Fatal(err)
		}
		hasNumbers := strings.ContainsAny(src, "0123456789")
		for _, indent := range []bool{false, true} {
			var b []byte
			if indent {
				b, _ = json.MarshalIndent(v, "", "  ")
			} else {
				b, _ = json.Marshal(v)
			}
			got := jsonSize(v, indent, 0)
			if got < int64(len(b)) || !hasNumbers && got != int64(len(b)) {
				t.Errorf("%.40s indent %v: jsonSize %d, encoder %d bytes", src, indent, got, len(b))
			}
		}
	}
}

// patternInsts errs high: never below the program Go compiles.
func TestPatternInstsErrsHigh(t *testing.T) {
	for _, p := range []string{
		"a", "abc", "a*", "(a|b)*c", "[a-z]{100}", "(?:a{30}){30}", "x{2,5}", "x{3,}", "(ab){4}c{2}",
		`\d+\.\d{2}`, `^[^@]+@[^@]+\.[a-z]{2,}$`, "[]a]", `[\]]{10}`, "(((a{5}){5}){5})", "a|b|c|d",
	} {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		if est := patternInsts(p); est < int64(len(prog.Inst))-4 {
			t.Errorf("%s: estimated %d instructions, Go compiles %d", p, est, len(prog.Inst))
		}
	}
}
