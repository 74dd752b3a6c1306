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
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:k-secret"))
	if err := s.learn(dv(basic), dv("k-secret")); err != nil {
		t.Fatal(err)
	}
	cred := strings.TrimPrefix(basic, "Basic ")
	for _, in := range []string{cred, strings.ToLower(cred), basic} {
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
	for i := len(s.keys); i < maxDerivedSecrets; i++ {
		if err := s.learn(dv(fmt.Sprintf("d%04dz", i))); err != nil {
			t.Fatalf("value %d refused: %v", i, err)
		}
	}
	if err := s.learn(dv("one-too-many")); err == nil || !strings.Contains(err.Error(), "LIMIT_EXCEEDED") && !strings.Contains(err.Error(), "more than 32") {
		t.Errorf("learn past the cap = %v, want LIMIT_EXCEEDED", err)
	}
	before := s.String("d0031z one-too-many")
	if err := s.learn(dv("one-more"), dv("two-more")); err == nil {
		t.Error("learn past the cap with two values succeeded")
	}
	if got := s.String("d0031z one-too-many one-more"); got != before+" one-more" {
		t.Errorf("a refused learn added something: %q", got)
	}
	var none *scrubber
	if none.String("k-secret") != "k-secret" || none.learn(dv("x")) != nil || none.value("v") != "v" {
		t.Error("the nil scrubber changed something")
	}
}

// dv is a derived value whose shadow is itself.
func dv(v string) derived { return derived{value: v, key: v} }
