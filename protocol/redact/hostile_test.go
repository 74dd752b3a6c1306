package redact

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// Hostile redaction: the values a Redactor knows are partly chosen by a
// workflow's author (the values an execution derives from its secrets and
// learns, see engine/secrets/scrub.go), and the texts it scans are chosen by the
// author and by remote hosts. Every occurrence of every form must go,
// however the forms overlap — a value overlapping a secret must not keep
// part of the secret out of the marker — and the cost must stay linear in
// the text and in what the Redactor is built from, on the most repetitive
// input.

// naiveRedact is the reference: the union of the intervals of every
// occurrence of every form of every value, in the text and, when it has an
// upper-case letter, a '%', a backslash or a '&', in its folded view (each
// unit of viewUnit decoded), each maximal run replaced by one Marker.
func naiveRedact(values []string, s string) string {
	covered := make([]bool, len(s))
	for _, v := range values {
		for _, f := range valueForms(v) {
			if f == "" {
				continue
			}
			for i := 0; i+len(f) <= len(s); i++ {
				if s[i:i+len(f)] == f {
					for j := i; j < i+len(f); j++ {
						covered[j] = true
					}
				}
			}
		}
	}
	// The folded view of s, when it differs from s: each byte read, where
	// it began and ended in s.
	if needsFold(s) {
		var view []byte
		var from, to []int
		for i := 0; i < len(s); {
			bs, next := viewUnit(s, i, nil)
			for j, c := range bs {
				if next-i == len(bs) { // read as written: byte for byte
					from, to = append(from, i+j), append(to, i+j+1)
				} else {
					from, to = append(from, i), append(to, next)
				}
				view = append(view, lower(c))
			}
			i = next
		}
		for _, v := range values {
			for _, f := range valueForms(v) {
				if f = fold(f); f == "" {
					continue
				}
				for i := 0; i+len(f) <= len(view); i++ {
					if string(view[i:i+len(f)]) == f {
						for j := from[i]; j < to[i+len(f)-1]; j++ {
							covered[j] = true
						}
					}
				}
			}
		}
	}
	// Each covered run goes on to the end of the base64 run it ends
	// inside (TestHostileEncodedResidue holds encodedRun to that).
	for i := 0; i < len(s); i++ {
		if covered[i] && (i+1 == len(s) || !covered[i+1]) {
			start := i
			for start > 0 && covered[start-1] {
				start--
			}
			for j, end := i+1, encodedRun(s, span{start, i + 1}); j < end; j++ {
				covered[j] = true
			}
		}
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if !covered[i] {
			b.WriteByte(s[i])
			continue
		}
		if i == 0 || !covered[i-1] {
			b.WriteString(Marker)
		}
	}
	return b.String()
}

// TestHostileOverlap: a value that overlaps a secret, ending inside it or
// starting inside it, whichever was learned first, cannot shadow any part
// of the secret: the union of what they cover is one marker (issue 18,
// class 8: a learned "qT" left "opSecretValue123" of an echoed
// "qTopSecretValue123").
func TestHostileOverlap(t *testing.T) {
	const secret = "TopSecretValue123"
	var guesses []string // the 32 values of the guessing variant
	for _, c := range "abcdefghijklmnopqrstuvwxyz012345" {
		guesses = append(guesses, "q"+string(c))
	}
	for _, tt := range []struct {
		name    string
		base    []string // New's
		learned []string // then With's, one by one
		text    string
		want    string
	}{
		{"a learned prefix overlapping the secret", []string{secret}, []string{"qT"}, "qTopSecretValue123", Marker},
		{"the same, learned before the secret", []string{"qT"}, []string{secret}, "qTopSecretValue123", Marker},
		{"both in one Redactor", []string{"qT", secret}, nil, "x qTopSecretValue123 y", "x " + Marker + " y"},
		{"32 learned guesses, lower-cased", []string{secret}, guesses, "qtopsecretvalue123", Marker},
		{"32 learned guesses, upper-cased", []string{secret}, guesses, "QTOPSECRETVALUE123", Marker},
		{"32 learned guesses, as sent", []string{secret}, guesses, "qTopSecretValue123|QTopSecretValue123", Marker + "|" + Marker}, // "qT" is "qt" in any case
		{"a learned suffix overlapping the secret", []string{secret}, []string{"123!"}, "TopSecretValue123!", Marker},
		{"a learned value inside the secret", []string{secret}, []string{"Secret"}, "TopSecretValue123", Marker},
		{"two secrets overlapping", []string{"TopSecret", "SecretValue123"}, nil, "TopSecretValue123", Marker},
		{"two secrets overlapping, learned", []string{"TopSecret"}, []string{"SecretValue123"}, "<TopSecretValue123>", "<" + Marker + ">"},
		{"a chain of overlaps", []string{"abcd"}, []string{"cdef", "efgh", "ghij"}, "<abcdefghij>", "<" + Marker + ">"},
		{"adjacent secrets are one run", []string{"abcd", "efgh"}, nil, "abcdefgh", Marker},
		{"apart, two runs", []string{"abcd", "efgh"}, nil, "abcd efgh", Marker + " " + Marker},
		{"a credential overlapping its scheme", []string{"Bearer s3cr3t-t0ken"}, []string{"er s3"}, "Bearer s3cr3t-t0ken", Marker},
		{"an escaped form overlapping another", []string{"a/b c"}, []string{"x%2F"}, "ax%2Fb+c a%2Fb+c", "a" + Marker + " " + Marker}, // the base64 run goes on after x%2F
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := New(tt.base...)
			for _, v := range tt.learned {
				r = r.With(v)
			}
			got := r.String(tt.text)
			if got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.text, got, tt.want)
			}
			if b := string(r.Bytes([]byte(tt.text))); b != got {
				t.Errorf("Bytes = %q, String = %q", b, got)
			}
			all := append(slices.Clone(tt.base), tt.learned...)
			if ref := naiveRedact(all, tt.text); got != ref {
				t.Errorf("String(%q) = %q, the union of every occurrence is %q", tt.text, got, ref)
			}
		})
	}
}

// TestHostileUnionReference: on random values and texts over a small
// alphabet, where forms overlap all the time, the Redactor replaces
// exactly the union of every occurrence of every form, however the values
// were added.
func TestHostileUnionReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 8))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abAB/ %"[rng.IntN(7)]
		}
		return string(b)
	}
	for i := range 300 {
		values := make([]string, 1+rng.IntN(6))
		for j := range values {
			values[j] = word(1 + rng.IntN(6))
		}
		text := word(rng.IntN(80))
		var r *Redactor
		switch i % 3 {
		case 0:
			r = New(values...)
		case 1:
			r = New(values[0])
			for _, v := range values[1:] {
				r = r.With(v)
			}
		default:
			r = New().With(values...)
		}
		if got, want := r.String(text), naiveRedact(values, text); got != want {
			t.Fatalf("values %q, text %q: got %q, want %q", values, text, got, want)
		}
	}
}

// TestHostileLinear: scanning is linear in the text and building linear in
// the values, on the inputs that made strings.Replacer quadratic (a 256 KiB
// learned value then a 2 MB traced output took 26 s, a set node 13.6 s),
// and adding values one by one rebuilds each only a few times.
func TestHostileLinear(t *testing.T) {
	slow := 2 * time.Second
	if raceEnabled {
		slow = 10 * time.Second
	}
	for _, tt := range []struct {
		name   string
		values []string
		text   string
	}{
		{"a long run of one byte against a text of it", []string{strings.Repeat("a", 256<<10) + "!"}, strings.Repeat("a", 2<<20)},
		{"a period-2 value against a text of it", []string{strings.Repeat("ab", 64<<10) + "c"}, strings.Repeat("ab", 1<<20)},
		{"many prefixes of the text", prefixes(strings.Repeat("xy", 2048), 32), strings.Repeat("xy", 1<<20)},
		{"a value that ends the text", []string{strings.Repeat("a", 64<<10) + "!"}, strings.Repeat("a", 1<<20) + "!"},
		{"escape-heavy values", []string{strings.Repeat("%/", 8<<10) + "!"}, strings.Repeat("%25%2F", 256<<10)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			r := New(tt.values...)
			out := r.String(tt.text)
			if d := time.Since(start); d > slow {
				t.Errorf("took %v", d)
			}
			if strings.HasSuffix(tt.text, "!") && !strings.HasSuffix(out, Marker) {
				t.Errorf("the value at the end was not redacted")
			}
		})
	}
	t.Run("32 values of 8 KiB added one by one", func(t *testing.T) {
		size := 8 << 10
		if raceEnabled {
			size = 2 << 10 // the race detector slows the build tenfold
		}
		start := time.Now()
		r := New("base-secret")
		rng := rand.New(rand.NewPCG(1, 2))
		var added []string
		for i := range 32 {
			b := make([]byte, size)
			for j := range b {
				b[j] = byte('A' + rng.IntN(52))
			}
			v := fmt.Sprintf("%02d%s", i, b)
			added = append(added, v)
			r = r.With(v)
		}
		if d := time.Since(start); d > 4*slow {
			t.Errorf("took %v", d)
		}
		if n := len(r.layers); n > 7 {
			t.Errorf("%d layers after 33 values, want O(log n)", n)
		}
		for _, v := range append(added, "base-secret") {
			if got := r.String("<" + v + ">"); got != "<"+Marker+">" {
				t.Fatalf("value %.8q… not redacted after the others were added", v)
			}
		}
	})
}

func prefixes(s string, n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, s[:len(s)*i/n]+"!")
	}
	return out
}

// TestWithLeavesReceiver: With returns another Redactor; the one it was
// called on replaces what it did.
func TestWithLeavesReceiver(t *testing.T) {
	r := New("one-secret")
	r2 := r.With("two-secret")
	if got := r.String("one-secret two-secret"); got != Marker+" two-secret" {
		t.Errorf("r = %q", got)
	}
	if got := r2.String("one-secret two-secret"); got != Marker+" "+Marker {
		t.Errorf("r2 = %q", got)
	}
	var none *Redactor
	if got := none.With("x-secret").String("x-secret"); got != Marker {
		t.Errorf("nil.With = %q", got)
	}
}
