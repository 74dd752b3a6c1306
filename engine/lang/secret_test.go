package lang

import (
	"context"
	"strings"
	"testing"
)

// TestExpressionErrorsWithSecretsCarryNoValues: the failure of an
// expression that reads secrets says what failed without the operands.
func TestExpressionErrorsWithSecretsCarryNoValues(t *testing.T) {
	const secret = "hunter2secret"
	ev := NewEvaluator(context.Background(), &testEnv{input: map[string]any{}}, Template{}, Budget{MaxSteps: 10_000_000, MaxMemory: 16 << 20}, nil)
	ev.SetSecrets(map[string]any{"tok": secret})
	sc := &Scope{Visible: func(string) bool { return false }, Ancestors: func() []string { return nil }, Secrets: map[string]bool{"tok": true}}
	for _, src := range []string{
		`int(join(split(secrets.tok, ''), ' '))`,
		`int(secrets.tok)`,
		`fromJSON(secrets.tok)`,
		`secrets.tok + 1`,
		`secrets.tok[100]`,
		`float(secrets.tok) > 1`,
	} {
		e, err := compileExpr(src, sc)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		_, err = ev.run(e)
		if err == nil {
			t.Fatalf("%s: evaluated without error", src)
		}
		msg := err.Error()
		for _, form := range []string{secret, "h u n t e r", "'h'", "13"} {
			if strings.Contains(msg, form) {
				t.Errorf("%s: message %q carries %q", src, msg, form)
			}
		}
		if !strings.Contains(msg, src) {
			t.Errorf("%s: message %q does not name the expression", src, msg)
		}
	}
}
