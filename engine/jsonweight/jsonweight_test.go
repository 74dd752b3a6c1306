package jsonweight_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/engine/jsonweight"
	"github.com/runnerd/lambda-runner/engine/lang"
)

// The weight of a text is what lang.SizeOf counts of its decoded value,
// never less; more only by the escapes in its strings (each counted as its
// text), whether the text is weighed whole or in pieces.
func TestWeightIsSizeOf(t *testing.T) {
	texts := []string{
		`null`, `1`, `-1.5e300`, `true`, `"abc"`, `""`, `[]`, `{}`,
		`[1,2,3]`, `{"a":1,"bb":[true,false,null]}`, `[{},{},{}]`, `[[],[[]],[[[]]]]`,
		`{"a":{"b":{"c":"d"}},"e":[{"f":"g"},"h",1e5]}`,
		` { "a" : [ 1 , { } , "x" ] , "b" : { } } `,
		`["a,b", "{[", "]}", ":"]`,
	}
	r := rand.New(rand.NewPCG(21, 1))
	for range 300 {
		texts = append(texts, randomJSON(r, 4))
	}
	for _, text := range texts {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		want := lang.SizeOf(v)
		if got := jsonweight.Of([]byte(text)); got != want {
			t.Errorf("Of(%s) = %d, SizeOf = %d", text, got, want)
		}
		// In pieces of every size.
		for size := 1; size <= 7; size++ {
			var m jsonweight.Meter
			for i := 0; i < len(text); i += size {
				_, _ = m.Write([]byte(text[i:min(i+size, len(text))]))
			}
			if m.Weight() != want {
				t.Fatalf("%s in pieces of %d: %d, want %d", text, size, m.Weight(), want)
			}
		}
	}
	// Escapes weigh their text: at least what they decode to.
	esc := `["\u0001\n\"\\"]`
	var v any
	_ = json.Unmarshal([]byte(esc), &v)
	if got, at := jsonweight.Of([]byte(esc)), lang.SizeOf(v); got < at {
		t.Errorf("Of(%s) = %d, under SizeOf's %d", esc, got, at)
	}
}

// The structure a reply multiplies is weighed as it decodes.
func TestWeightOfStructure(t *testing.T) {
	text := "[" + strings.TrimSuffix(strings.Repeat("{},", 1<<18), ",") + "]"
	if got := jsonweight.Of([]byte(text)); got < 20*int64(len(text)) {
		t.Errorf("a text of %d bytes of {} weighs %d", len(text), got)
	}
}

func randomJSON(r *rand.Rand, depth int) string {
	switch k := r.IntN(6); {
	case depth == 0 || k == 0:
		return []string{`1`, `"s"`, `null`, `true`, `-2.5`, `"a:b,c"`}[r.IntN(6)]
	case k < 3:
		parts := make([]string, r.IntN(4))
		for i := range parts {
			parts[i] = randomJSON(r, depth-1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		parts := make([]string, r.IntN(4))
		for i := range parts {
			parts[i] = `"k` + strings.Repeat("x", i) + `":` + randomJSON(r, depth-1)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
}
