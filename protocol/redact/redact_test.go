package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

func TestRedactorForms(t *testing.T) {
	const secret = `Tok en/+&"<Ab9>`
	jsonGo, _ := json.Marshal(secret)
	tests := []struct {
		name string
		in   string
	}{
		{"exact", "x " + secret + " y"},
		{"lower-cased (a URL host)", "host " + strings.ToLower(secret) + ".example"},
		{"upper-cased", strings.ToUpper(secret)},
		{"JSON-escaped (Go)", string(jsonGo)},
		{"JSON-escaped without HTML escaping", `"Tok en/+&\"<Ab9>"`},
		{"JSON-escaped with escaped slash", `"Tok en\/+&\"<Ab9>"`},
		{"query-escaped", "?q=" + url.QueryEscape(secret)},
		{"query-escaped, lower hex", "?q=" + strings.ToLower(url.QueryEscape(secret))},
		{"path-escaped", "/p/" + url.PathEscape(secret)},
		{"whole-path escaped", (&url.URL{Path: "/" + secret}).EscapedPath()},
		{"every byte escaped, %20", "Tok%20en%2F%2B%26%22%3CAb9%3E"},
		{"every byte escaped, lower hex", "Tok%20en%2f%2b%26%22%3cAb9%3e"},
		{"lower-cased then escaped", url.QueryEscape(strings.ToLower(secret))},
	}
	r := New(secret)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.String(tt.in)
			if !strings.Contains(got, Marker) {
				t.Errorf("String(%q) = %q, want a %s", tt.in, got, Marker)
			}
			for _, f := range Forms(secret) {
				if strings.Contains(got, f) {
					t.Errorf("String(%q) = %q still holds form %q", tt.in, got, f)
				}
			}
		})
	}
}

func TestRedactorCredential(t *testing.T) {
	tests := []struct {
		header, echo string
		want         bool
	}{
		{"Bearer s3cr3t-token", "invalid token s3cr3t-token", true},
		{"basic dXNlcjpwYXNz", "bad credentials dXNlcjpwYXNz", true},
		{"token ghp_abcdef", "token ghp_abcdef rejected: ghp_abcdef", true},
		{"Digest realm=x", "realm=x", false}, // not a scheme whose second word is a credential
	}
	for _, tt := range tests {
		got := New(tt.header).String(tt.echo)
		if has := strings.Contains(got, Marker); has != tt.want {
			t.Errorf("New(%q).String(%q) = %q, redacted %v, want %v", tt.header, tt.echo, got, has, tt.want)
		}
	}
}

func TestRedactorLongestFirstAndValidJSON(t *testing.T) {
	r := New("abc", "abcdef")
	if got := r.String("abcdef"); got != Marker {
		t.Errorf("String = %q, want one marker", got)
	}
	b, _ := json.Marshal(map[string]string{"k": `he said "abcdef"`})
	out := r.Bytes(b)
	if !json.Valid(out) {
		t.Errorf("Bytes(%s) = %s, not valid JSON", b, out)
	}
}

func TestRedactorZero(t *testing.T) {
	var r *Redactor
	if r.String("x") != "x" || !r.Empty() || !New("", "").Empty() || New("a").Empty() {
		t.Error("nil or empty Redactor must replace nothing; a non-empty one must not be Empty")
	}
}

// FuzzRedactor checks that no listed form of a secret survives, wherever it
// sits in the text, and that redacting never panics.
func FuzzRedactor(f *testing.F) {
	f.Add("s3cr3t", "prefix ", " suffix")
	f.Add("a b/c", `{"x":"`, `"}`)
	f.Add("Bearer tok", "echo ", "")
	f.Add("ÄÖ\x00\xff", "", "")
	f.Fuzz(func(t *testing.T, secret, pre, post string) {
		if secret == "" || len(secret) > 64 {
			return
		}
		r := New(secret)
		for _, form := range Forms(secret) {
			got := r.String(pre + form + post)
			if strings.Contains(got, form) && !strings.Contains(pre+post, form) && !strings.Contains(Marker, form) {
				t.Fatalf("form %q of %q survived: %q", form, secret, got)
			}
		}
	})
}

func TestRedactorMessage(t *testing.T) {
	r := New("s3cret")
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"  key s3cret refused\n", 100, "key " + Marker + " refused"},
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcdef…"},
		{"ab\xffcdéf", 6, "abcd…"},       // invalid bytes dropped, a cut é too
		{"s3cret and more", 5, "[REDA…"}, // redacted before it is cut
	}
	for _, tt := range tests {
		if got := r.Message(tt.in, tt.n); got != tt.want {
			t.Errorf("Message(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// TestEncodedForms: a secret base64- or hex-encoded, the encodings a
// request needs, is redacted like the secret; a short one's are not, as
// they would match any text.
func TestEncodedForms(t *testing.T) {
	const secret = "s3cr3t/value?+"
	r := New(secret)
	b := []byte(secret)
	for _, form := range []string{
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		url.QueryEscape(base64.StdEncoding.EncodeToString(b)),
		hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
	} {
		if got := r.String("x " + form + " y"); got != "x "+Marker+" y" {
			t.Errorf("%q redacted to %q", form, got)
		}
	}
	if got := New("abc").String(base64.StdEncoding.EncodeToString([]byte("abc"))); got != "YWJj" {
		t.Errorf("the base64 of a 3-byte secret was redacted: %q", got)
	}
}

// BenchmarkRedact: a 64 KiB reply, mostly JSON, with three secrets among
// six, redacted as events and errors are.
func BenchmarkRedact(b *testing.B) {
	secrets := []string{"sk-live-0123456789abcdef", "Bearer tok_ABCDEFGHIJKL", "p@ss:w/rd+1", "hunter22", "AKIAEXAMPLEKEY000000", "x-api-key-zzz"}
	r := New(secrets...)
	var sb strings.Builder
	for sb.Len() < 64<<10 {
		sb.WriteString(`{"id":"chatcmpl-123","object":"chat.completion","content":"The answer is 42, said hunter22 to Alice%20and%20Bob. `)
		sb.WriteString(`Visit https://example.com/path?q=a%2Fb&key=sk-live-0123456789abcdef"},`)
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		_ = r.String(text)
	}
}

// BenchmarkNew: a Redactor of six secrets, as a request builds one.
func BenchmarkNew(b *testing.B) {
	secrets := []string{"sk-live-0123456789abcdef", "Bearer tok_ABCDEFGHIJKL", "p@ss:w/rd+1", "hunter22", "AKIAEXAMPLEKEY000000", "x-api-key-zzz"}
	for b.Loop() {
		_ = New(secrets...)
	}
}
