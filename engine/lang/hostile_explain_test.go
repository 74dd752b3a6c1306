package lang

import (
	"errors"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// An author controls what a failure's message is made from: the objects
// whose keys it lists, the references it names, how often it fails. The
// message stays short, its work is charged to the evaluation, and a spent
// budget leaves the failure an EXPRESSION_ERROR with fewer words, never a
// different outcome.
func TestHostileExplain(t *testing.T) {
	huge := make(map[string]any, 5000)
	for i := range 5000 {
		huge[strings.Repeat("k", 60)+itoa36(i)] = 1.0
	}
	longKey := strings.Repeat("x", 100_000)
	env := &testEnv{input: map[string]any{
		"huge": huge,
		"long": map[string]any{longKey: 1.0, strings.Repeat("y", 5000): nil},
		"deep": nest(60),
	}}
	tests := []struct {
		name  string
		src   string
		steps int64
		// maxRest bounds the message after the expression's own text.
		maxRest int
		want    string
	}{
		{name: "an object of 5,000 keys is counted, not searched", src: "input.huge.kex + 1", steps: 1e7, maxRest: 200, want: "it has 5000 keys"},
		{name: "keys of 100,000 bytes are cut", src: "input.long.x + 1", steps: 1e7, maxRest: 400, want: `"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"…)`},
		{name: "a reference of 5,000 bytes is not named", src: "input.long['" + strings.Repeat("y", 5000) + "'] + 1", steps: 1e7, maxRest: 200, want: "cannot compute null + number"},
		{name: "a reference 60 deep", src: "input.deep" + strings.Repeat(".a", 59) + ".b + 1", steps: 1e7, maxRest: 600, want: "cannot compute null + number"},
		{name: "a spent budget leaves no facts", src: "input.huge.kex + 1", steps: 2, maxRest: 200, want: "cannot compute null + number"},
		{name: "a budget spent by the search leaves the keys unlisted", src: "input.long.x + 1", steps: 10, maxRest: 200, want: "cannot compute null + number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err, ok := runExplained(t, env, tt.src, Budget{MaxSteps: tt.steps, MaxMemory: 1 << 20})
			if !ok {
				t.Fatalf("%s does not compile", tt.src)
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != protocol.CodeExpressionError {
				t.Fatalf("got %v, want an EXPRESSION_ERROR", err)
			}
			_, rest, _ := strings.Cut(e.Message, tt.src+`"`)
			if len(rest) > tt.maxRest {
				t.Errorf("%d bytes after the expression, want at most %d: %.300s", len(rest), tt.maxRest, rest)
			}
			if !strings.Contains(rest, tt.want) {
				t.Errorf("message %.400q does not say %q", rest, tt.want)
			}
			checkWords(t, tt.src, err)
		})
	}
}

func itoa36(i int) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	s := ""
	for {
		s = string(digits[i%36]) + s
		if i /= 36; i == 0 {
			return s
		}
	}
}

// nest is {a: {a: … {b: 1}}} depth deep.
func nest(depth int) any {
	var v any = map[string]any{"c": 1.0}
	for range depth {
		v = map[string]any{"a": v}
	}
	return v
}
