package lang

import (
	"context"
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

// The failure of an expression that reads secrets keeps to its value-free
// words: no facts, no keys, no values, and no word of Go.
func TestHostileExplainSecrets(t *testing.T) {
	sc := &Scope{Visible: func(string) bool { return false }, Ancestors: func() []string { return nil }, Secrets: map[string]bool{"tok": true}}
	env := &testEnv{input: map[string]any{"n": 1.0, "obj": map[string]any{"s3cretkey": 1.0}}}
	ev := NewEvaluator(context.Background(), env, Template{}, Budget{MaxSteps: 1e6, MaxMemory: 1 << 20}, nil)
	ev.SetSecrets(map[string]any{"tok": "s3cret"})
	for _, src := range []string{
		`'Bearer ' + secrets.tok + input.n`,
		`'Bearer ' + secrets.tok + input.obj.s3cretkez`,
		`[secrets.tok, input.n.x]`,
	} {
		e, err := compileExpr(src, sc)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		_, err = ev.Run(e)
		var le *Error
		if !errors.As(err, &le) || le.Code != protocol.CodeExpressionError {
			t.Fatalf("%s: got %v, want an EXPRESSION_ERROR", src, err)
		}
		rest := strings.TrimPrefix(le.Message, `expression "`+strings.ReplaceAll(src, `"`, `\"`)+`"`)
		if strings.Contains(rest, "s3cret") || strings.Contains(rest, " is ") || strings.Contains(rest, "has no key") {
			t.Errorf("%s: message says more than the kind of failure: %s", src, le.Message)
		}
		// Types are withheld too: only the words are judged.
		if w := goish.FindString(rest); w != "" {
			t.Errorf("%s: message has %q: %s", src, w, le.Message)
		}
	}
}
