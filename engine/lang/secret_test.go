package lang

import (
	"context"
	"strings"
	"testing"
)

// TestSecretRule: every use of a secret other than passing it on is
// refused before acceptance, whatever name or shape it takes in the text;
// passing it on compiles and evaluates to what is sent.
func TestSecretRule(t *testing.T) {
	sc := &Scope{Visible: func(string) bool { return false }, Ancestors: func() []string { return nil },
		Secrets: map[string]bool{"tok": true, "user": true}, Node: "h", Item: true}
	for _, tt := range []struct {
		src  string
		want string // in the refusal, "" when allowed
	}{
		// The oracles of issue 18: branch, compare, measure, slice, index.
		{`secrets.tok[item.p:item.p+1] == item.c ? 'a' : 'b'`, "slices a secret"},
		{`secrets.tok == 'x'`, "operator =="},
		{`secrets.tok != nil`, "operator !="},
		{`secrets.tok > 'm'`, "operator >"},
		{`secrets.tok ? 1 : 2`, "branches on a secret"},
		{`len(secrets.tok)`, "len()"},
		{`secrets.tok[0]`, "reads a field or element"},
		{`secrets.tok.x`, "reads a field or element"},
		{`secrets.tok matches '^a'`, "operator matches"},
		{`'a' in secrets.tok`, "operator in"},
		{`secrets.tok contains 'a'`, "operator contains"},
		{`secrets.tok startsWith 'a'`, "operator startsWith"},
		{`upper(secrets.tok)`, "upper()"},
		{`int(secrets.tok)`, "int()"},
		{`fromJSON(secrets.tok)`, "fromJSON()"},
		{`toJSON(secrets.tok)`, "toJSON()"},
		{`split(secrets.tok, '')`, "split()"},
		{`indexOf(secrets.tok, 'a')`, "indexOf()"},
		{`secrets.tok + 1`, "adds a number"},
		{`not secrets.tok`, "applies not"},
		{`-secrets.tok`, "applies -"},
		{`secrets.tok ?? 'x'`, "operator ??"},
		{`keys(secrets)`, "keys()"},
		{`len(secrets)`, "len()"},
		{`secrets[secrets.tok]`, "indexes secrets by a secret"},
		{`input[secrets.tok]`, "indexes a value by a secret"},
		{`{(secrets.tok): 1}`, "object key"},
		{`map([1], {secrets.tok == #})`, "operator =="},
		{`all([1], {secrets.tok})`, "predicate"},
		{`filter([secrets.tok], {# == 'a'})`, "filter()"},
		// Through a name, however many.
		{`let s = secrets.tok; s[0:1] == 'a'`, "slices a secret"},
		{`let s = secrets.tok; let t = 'x' + s; len(t)`, "len()"},
		{`let s = [secrets.tok]; s[0] == 'a'`, "reads a field or element"},
		{`let s = {'k': secrets.tok}; s.k == 'a'`, "reads a field or element"},
		{`let s = toBase64(secrets.tok); s == 'YQ=='`, "operator =="},
		// A secret placed more than once through a name: doubling it makes
		// a value whose size tells the secret's length (issue 18, class 7).
		{`let s0 = secrets.tok + item; let s1 = s0 + s0; let s2 = s1 + s1; s2`, "reads s0, which holds a secret, more than once"},
		{`let s = secrets.tok; s + s`, "reads s, which holds a secret"},
		{`let s = secrets.tok; [s, s]`, "reads s, which holds a secret"},
		{`let s = secrets.tok; {'a': s, 'b': s}`, "reads s, which holds a secret"},
		{`let s = toBase64(secrets.tok); s + ':' + s`, "reads s, which holds a secret"},
		{`let s = secrets.tok; let t = s; t + s`, "reads s, which holds a secret"},
		{`let s = secrets.tok; let t = 'x' + s; t + t`, "reads t, which holds a secret"},
		{`let s = secrets.tok; input.x ? s : s`, "reads s, which holds a secret"},
		{`let s = [secrets.tok]; let t = s; [t, t]`, "reads t, which holds a secret"},
		// Passing on.
		{`let s = secrets.tok; let t = 'Bearer ' + s; t`, ""},
		{`let p = 'x'; p + p + secrets.tok + p`, ""},
		{`secrets.user + ':' + secrets.tok`, ""},
		{`secrets.tok`, ""},
		{`'Bearer ' + secrets.tok`, ""},
		{`'Basic ' + toBase64(secrets.user + ':' + secrets.tok)`, ""},
		{`[secrets.tok, 'x']`, ""},
		{`{'token': secrets.tok}`, ""},
		{`input.x > 1 ? secrets.tok : secrets.user`, ""},
		{`input.x ?? secrets.tok`, ""},
		{`let s = secrets.tok; 'k=' + s`, ""},
		{`secrets[input.name]`, ""},
		{`secrets`, ""},
	} {
		t.Run(tt.src, func(t *testing.T) {
			_, err := compileExpr(tt.src, sc)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("accepted, want a refusal saying %q", tt.want)
			case err != nil:
				msg := err.Error()
				for _, part := range []string{tt.want, `node "h"`, tt.src, "docs/security.md"} {
					if !strings.Contains(msg, part) {
						t.Errorf("message %q does not say %q", msg, part)
					}
				}
			}
		})
	}
}

// TestSecretsPassedOnEvaluate: what the rule allows evaluates to what is
// sent.
func TestSecretsPassedOnEvaluate(t *testing.T) {
	sc := &Scope{Visible: func(string) bool { return false }, Ancestors: func() []string { return nil }, Secrets: map[string]bool{"tok": true, "user": true}}
	ev := NewEvaluator(context.Background(), &testEnv{input: map[string]any{}}, Template{}, Budget{MaxSteps: 1e6, MaxMemory: 1 << 20}, nil)
	ev.SetSecrets(map[string]any{"tok": "s3cret", "user": "ada"})
	for src, want := range map[string]any{
		`'Basic ' + toBase64(secrets.user + ':' + secrets.tok)`: "Basic YWRhOnMzY3JldA==",
		`'Bearer ' + secrets.tok`:                               "Bearer s3cret",
	} {
		e, err := compileExpr(src, sc)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ev.Run(e); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
}
