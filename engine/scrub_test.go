package engine

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol/redact"
)

// TestScrubberLearn: a value derived from a secret is redacted once
// learned, in its forms too; one already holding a secret is not added;
// past maxDerivedSecrets the next is refused.
func TestScrubberLearn(t *testing.T) {
	s := newScrubber([]string{"k-secret"})
	derived := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:k-secret"))
	if err := s.learn(derived, "Bearer k-secret"); err != nil {
		t.Fatal(err)
	}
	cred := strings.TrimPrefix(derived, "Basic ")
	for _, in := range []string{cred, strings.ToLower(cred), derived} {
		if got := s.String("x " + in); got != "x "+redact.Marker {
			t.Errorf("%q scrubbed to %q", in, got)
		}
	}
	if got := s.String("Bearer k-secret"); got != "Bearer "+redact.Marker {
		t.Errorf("a value holding the secret became %q, want only the secret redacted", got)
	}
	v := s.value(map[string]any{"a": []any{"k-secret", 1.0}, cred: "x"})
	if got := fmt.Sprint(v); strings.Contains(got, "k-secret") || strings.Contains(got, cred) {
		t.Errorf("value scrubbed to %s", got)
	}
	for i := len(s.derived); i < maxDerivedSecrets; i++ {
		if err := s.learn(fmt.Sprintf("d%04dz", i)); err != nil {
			t.Fatalf("value %d refused: %v", i, err)
		}
	}
	if err := s.learn("one-too-many"); err == nil || !strings.Contains(err.Error(), "LIMIT_EXCEEDED") && !strings.Contains(err.Error(), "more than 32") {
		t.Errorf("learn past the cap = %v, want LIMIT_EXCEEDED", err)
	}
	var none *scrubber
	if none.String("k-secret") != "k-secret" || none.learn("x") != nil || none.value("v") != "v" {
		t.Error("the nil scrubber changed something")
	}
}
