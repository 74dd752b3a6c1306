package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// TestScrubberLearn: a value derived from a secret is redacted once
// learned, in its forms too; one already holding a secret is not added;
// past maxDerivedSecrets the next is refused.
func TestScrubberLearn(t *testing.T) {
	s := New([]string{"k-secret"})
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:k-secret"))
	if err := s.Learn(dv(basic), dv("k-secret")); err != nil {
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
	v := s.Value(map[string]any{"a": []any{"k-secret", 1.0}, cred: "x"})
	if got := fmt.Sprint(v); strings.Contains(got, "k-secret") || strings.Contains(got, cred) {
		t.Errorf("value scrubbed to %s", got)
	}
	for i := len(s.keys); i < maxDerivedSecrets; i++ {
		if err := s.Learn(dv(fmt.Sprintf("d%04dz", i))); err != nil {
			t.Fatalf("value %d refused: %v", i, err)
		}
	}
	if err := s.Learn(dv("one-too-many")); err == nil || !strings.Contains(err.Error(), "LIMIT_EXCEEDED") && !strings.Contains(err.Error(), "more than 32") {
		t.Errorf("learn past the cap = %v, want LIMIT_EXCEEDED", err)
	}
	before := s.String("d0031z one-too-many")
	if err := s.Learn(dv("one-more"), dv("two-more")); err == nil {
		t.Error("learn past the cap with two values succeeded")
	}
	if got := s.String("d0031z one-too-many one-more"); got != before+" one-more" {
		t.Errorf("a refused learn added something: %q", got)
	}
	var none *Scrubber
	if none.String("k-secret") != "k-secret" || none.Learn(dv("x")) != nil || none.Value("v") != "v" {
		t.Error("the nil scrubber changed something")
	}
}

// TestScrubberLearnsEncodedSecret: the part of a Basic credential a secret
// decides is learned even when it is the secret's own base64 (a username
// and colon of a multiple of three bytes: "ci:", "svc-user:"), so that a
// host echoing the header encoded again (hex, base64, at any offset) shows
// none of the credential; before, it was taken for a known form and only
// the secret's own forms were redacted (issue 45, class 9, a red team of
// the built runner).
func TestScrubberLearnsEncodedSecret(t *testing.T) {
	const secret = "Tr0ub4dor&3x/y+z?"
	for _, user := range []string{"ci:", "svc-user:", "ops:"} {
		s := New([]string{secret})
		build := func(v string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+v)) }
		win1, win2 := build(strings.Repeat("*", len(secret))), build(strings.Repeat("U", len(secret)))
		sh1, sh2 := build(strings.Repeat("*", MaxSecretBytes)), build(strings.Repeat("U", MaxSecretBytes))
		if err := s.Learn(DerivedPart(build(secret), win1, win2, sh1, sh2)); err != nil {
			t.Fatal(err)
		}
		header := build(secret)
		cred := strings.TrimPrefix(header, "Basic ")
		for _, echo := range []string{
			hex.EncodeToString([]byte(header)),
			base64.StdEncoding.EncodeToString([]byte(header)),
			base64.StdEncoding.EncodeToString([]byte("Authorization: " + header)),
		} {
			got := s.String(echo)
			for _, form := range []string{hex.EncodeToString([]byte(cred[len(cred)-12:])), base64.StdEncoding.EncodeToString([]byte(cred))[8:24]} {
				if strings.Contains(got, form) {
					t.Errorf("user %q: echo %q scrubbed to %q, which still holds the credential", user, echo, got)
				}
			}
			if !strings.Contains(got, redact.Marker) {
				t.Errorf("user %q: echo %q not redacted", user, echo)
			}
		}
	}
}

// dv is a derived value whose shadow is itself.
func dv(v string) Derived { return Derived{Value: v, Key: v} }

// TestScrubberShares: what a parent lends its batches is reserved until
// they end; what a batch reports is charged to its share, and what passes
// the share is learned all the same and refused.
func TestScrubberShares(t *testing.T) {
	s := New([]string{"share-secret"})
	set, caps, sh := s.Lend(4)
	if len(set.Keys) != 0 || caps.Keys != maxDerivedSecrets/4 || s.reserved.Keys != maxDerivedSecrets/4 {
		t.Fatalf("lend(4): %+v %+v reserved %+v", set, caps, s.reserved)
	}
	// A second batch shares what the first does not hold.
	_, caps2, sh2 := s.Lend(3)
	if caps2.Keys != (maxDerivedSecrets-maxDerivedSecrets/4)/3 {
		t.Errorf("second share: %+v", caps2)
	}
	s.Release(sh2)
	report := Learned{Keys: [][]byte{[]byte("k1"), []byte("k2")}, Values: [][]byte{[]byte("v-one"), []byte("v-two")}}
	if err := s.Absorb(report, sh); err != nil {
		t.Fatal(err)
	}
	if got := s.String("a v-one b"); got != "a [REDACTED] b" {
		t.Errorf("not learned: %q", got)
	}
	if len(s.keys) != 2 || s.reserved.Keys != maxDerivedSecrets/4-2 {
		t.Errorf("after absorb: %d keys, reserved %+v", len(s.keys), s.reserved)
	}
	// Reported again (the end line): nothing is charged twice.
	if err := s.Absorb(report, sh); err != nil || s.reserved.Keys != maxDerivedSecrets/4-2 {
		t.Errorf("absorbed twice: %v, reserved %+v", err, s.reserved)
	}
	var over Learned
	for i := range maxDerivedSecrets {
		over.Keys = append(over.Keys, fmt.Appendf(nil, "o%d", i))
	}
	over.Values = [][]byte{[]byte("v-over")}
	if err := s.Absorb(over, sh); codeOf(err) != string(protocol.CodeLimitExceeded) {
		t.Errorf("past the share: %v", err)
	}
	if got := s.String("v-over"); got != "[REDACTED]" {
		t.Errorf("past the share, not learned: %q", got)
	}
	s.Release(sh)
	if s.reserved != (Caps{}) {
		t.Errorf("reserved after release: %+v", s.reserved)
	}
	// A child: knows what it was sent, learns up to its caps, reports.
	c := New([]string{"share-secret"})
	var got []Learned
	c.Adopt(&Learned{Keys: [][]byte{[]byte("k1")}, Values: [][]byte{[]byte("v-one")}}, &Caps{Keys: 2, Worst: 1 << 20, Values: 10, Bytes: 1 << 20}, func(l Learned) error {
		got = append(got, l)
		return nil
	})
	if c.String("v-one") != "[REDACTED]" {
		t.Error("the child does not redact what it was sent")
	}
	if err := c.Learn(Derived{Value: "v-new", Key: "k2"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Learn(Derived{Value: "v-3", Key: "k3"}); err == nil {
		t.Error("the child learned past its caps")
	}
	if len(got) != 1 || string(got[0].Values[0]) != "v-new" || len(c.LearnedSince().Keys) != 1 {
		t.Errorf("reported %+v, since %+v", got, c.LearnedSince())
	}
}

// codeOf is the code of a refusal, "" for any other error.
func codeOf(err error) string {
	var se *Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return ""
}
