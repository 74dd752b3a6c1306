// Package redact removes secret values from text the runner shows to
// anyone: events, error messages, logs and adapter errors.
//
// A Redactor knows each secret in the forms it is likely to take on its way
// back: the value itself; lower- and upper-cased (host names are
// lower-cased by URL parsing, some services upper-case hex); JSON-escaped
// (with and without HTML escaping, with '/' escaped or not); URL-escaped
// (query and path escaping, every reserved byte escaped, '+' or %20 for a
// space, upper- or lower-case hex); and, for an HTTP credential header
// value such as "Bearer abc", "Basic abc" or "token abc", the credential
// alone, which a server may quote without its scheme.
//
// It also knows each secret base64-encoded (standard and URL alphabets,
// padded or not) and hex-encoded, the encodings a request needs.
//
// Any of these forms written another way — its letters in any mix of
// case, any byte percent-escaped though nothing needs it or escaped twice,
// characters as other JSON encoders escape them (\u00e4, surrogate pairs,
// \xHH) or as HTML quotes them (&amp; &#39; &#x27;) — is found too: a text
// with an upper-case letter, a '%', a backslash or a '&' is also read
// folded, each such escape decoded and letters lower-cased, as a URL
// decoder, a JSON or HTML reader and a case-blind reader would read it
// (viewUnit), and what a form matches there is replaced in the text.
//
// Every occurrence of every form is replaced, however occurrences overlap
// (the union of their intervals, one Marker per run), in one linear pass.
//
// What it cannot do: find a secret transformed in a way it does not know
// (split, reversed, hashed, encoded together with other text, spread over
// several messages) and then echoed back. The engine adds the values it
// built from secrets and sent (a Basic credential, the base64 of
// "user:secret") as secrets of their own; what a remote service does to a
// secret itself stays out of reach. docs/security.md says so too.
//
// The package imports only the standard library, so every layer can use it.
package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"unsafe"
)

// Marker replaces every secret. It holds no character that JSON or URL
// escaping changes, so redacted JSON stays valid JSON.
const Marker = "[REDACTED]"

// credentialSchemes are the HTTP authorization schemes whose credential
// part is a secret of its own. Matched case-insensitively.
var credentialSchemes = []string{"bearer", "basic", "token"}

// Redactor replaces secret values. The zero value and nil replace nothing.
// It is safe for concurrent use, and never changes: With returns another.
//
// Every occurrence of every form of every secret is replaced, however they
// overlap: the text covered by any of them, the union of their intervals,
// becomes one Marker per contiguous run. Which form matched, or which
// secret, is not told by the marker, and a value that overlaps a secret
// cannot keep part of the secret out of it.
//
// Its cost is linear: building it, in the total length of the forms;
// redacting a text, in the text's length (one Aho–Corasick pass per layer,
// whatever the secrets and the text repeat).
type Redactor struct {
	layers []*layer
}

// layer is a matcher of the forms of some values. With adds values as a
// layer of their own, merging layers of no more values than it (a binary
// counter), so that adding n values one by one rebuilds each O(log n)
// times and a text is scanned by O(log n) matchers.
type layer struct {
	values []string
	m      *matcher
	// folded matches the forms as findFolded reads text, for the ways of
	// writing a form it does not list: any mix of letter case, any byte
	// percent-escaped where no escape is needed (or twice), in either case
	// of hex, characters JSON-, \x- or HTML-escaped (viewUnit).
	folded *matcher
	// widest is the longest pattern of folded, in view bytes.
	widest int
	// leads are how the values' inner base64 forms at an offset within a
	// group begin (innerLeads): a marker starting with one takes the
	// character before it too (leadStart).
	leads map[string]bool
}

// New returns a Redactor for secrets. Empty values are ignored.
func New(secrets ...string) *Redactor {
	return (&Redactor{}).With(secrets...)
}

// With returns a Redactor that replaces what r does and every form of
// values too. r is unchanged.
func (r *Redactor) With(values ...string) *Redactor {
	values = slices.DeleteFunc(slices.Clone(values), func(v string) bool { return v == "" })
	var layers []*layer
	if r != nil {
		layers = slices.Clone(r.layers)
	}
	if len(values) == 0 {
		return &Redactor{layers: layers}
	}
	for len(layers) > 0 && len(layers[len(layers)-1].values) <= len(values) {
		values = append(slices.Clone(layers[len(layers)-1].values), values...)
		layers = layers[:len(layers)-1]
	}
	if l := newLayer(values); l != nil {
		layers = append(layers, l)
	}
	return &Redactor{layers: layers}
}

func newLayer(values []string) *layer {
	var forms []string
	for _, s := range values {
		forms = append(forms, valueForms(s)...)
	}
	forms = slices.DeleteFunc(forms, func(f string) bool { return f == "" })
	if len(forms) == 0 {
		return nil
	}
	// Many forms are the same text (a secret with nothing to escape is
	// its own JSON and URL forms): each is folded once.
	slices.Sort(forms)
	forms = slices.Compact(forms)
	l := &layer{values: values, m: newMatcher(forms), leads: map[string]bool{}}
	folded := make([]string, 0, len(forms))
	for _, f := range forms {
		if f = fold(f); f != "" {
			folded = append(folded, f)
			l.widest = max(l.widest, len(f))
		}
	}
	l.folded = newMatcher(folded)
	for _, s := range values {
		if len(s) >= minEncodedLen {
			for _, lead := range innerLeads(s) {
				l.leads[lead] = true
			}
		}
	}
	return l
}

// valueForms are the forms of a secret and, for an authorization value,
// of its credential part.
func valueForms(s string) []string {
	out := Forms(s)
	if cred := Credential(s); cred != "" && cred != s {
		out = append(out, Forms(cred)...)
	}
	return out
}

// spans returns the merged intervals of s that secrets occupy, each
// carried on to the end of the base64 run it ends inside (encodedRun).
func (r *Redactor) spans(s string) []span {
	spans := r.layers[0].m.find(s)
	// The folded view finds what the listed forms miss (mixed case,
	// needless escapes); a text with no upper-case letter, '%', backslash
	// or '&' reads the same folded, so only the listed forms can be in it.
	folds := needsFold(s)
	if folds {
		spans = append(spans, r.layers[0].folded.findFolded(s, r.layers[0].widest)...)
	}
	if len(r.layers) > 1 || folds {
		for _, l := range r.layers[1:] {
			// Each layer's spans are merged as they are found; those of
			// several are merged once all are.
			spans = append(spans, l.m.find(s)...)
			if folds {
				spans = append(spans, l.folded.findFolded(s, l.widest)...)
			}
		}
		spans = mergeSpans(spans)
	}
	if len(spans) == 0 {
		return spans
	}
	for i := range spans {
		// Up to the next span at most, which goes on from its own end:
		// each byte is looked at once, however many spans one run holds.
		limit := len(s)
		if i+1 < len(spans) {
			limit = spans[i+1].start
		}
		spans[i].end = encodedRun(s[:limit], spans[i])
		spans[i].start = r.leadStart(s, spans[i].start)
	}
	return mergeSpans(spans)
}

// leadStart returns where a span starting at start begins once it takes
// the base64 character before an inner form of a secret at an offset
// within a group, when one starts there: that character holds the last
// bits of the byte before the secret and the first bits of the secret's
// first byte, and left outside the marker "QmVhcmVyIF[REDACTED]" (the
// base64 of "Bearer " + secret) told the secret's first four bits.
func (r *Redactor) leadStart(s string, start int) int {
	if start == 0 || len(s)-start < leadLen {
		return start
	}
	head := s[start : start+leadLen]
	for _, l := range r.layers {
		if l.leads[head] {
			return start - base64CharBefore(s, start)
		}
	}
	return start
}

// base64CharBefore returns the length of the base64 character just
// before s[end], as text carries it (a byte, %2B or %2F query-escaped, \/ as
// JSON may escape it), 0 when there is none.
func base64CharBefore(s string, end int) int {
	switch {
	case end >= 3 && s[end-3] == '%' && s[end-2] == '2' && strings.IndexByte("bBfF", s[end-1]) >= 0:
		return 3
	case end >= 2 && s[end-2:end] == `\/`:
		return 2
	case end >= 1 && isBase64Byte(s[end-1]):
		return 1
	}
	return 0
}

// encodedRun returns where the base64 run that sp ends inside ends,
// padding included: sp.end when the text after sp does not go on in the
// base64 alphabets.
//
// Base64 mixes three bytes into four characters, so whatever follows a
// secret in one encoding (the padding of "user:secret", a suffix's
// characters) is aligned by the secret's length: left outside the marker,
// "dXNlcj[REDACTED]==" told the length modulo 3. What comes before a
// secret's form is aligned by the encoding's start, which no secret moves,
// and hex and percent-escapes encode byte by byte, so only the rest of
// the run goes. A secret in plain text followed by letters or digits takes
// them with it: redacting more tells less.
func encodedRun(s string, sp span) int {
	e := sp.end
	if e == sp.start || e == len(s) || !isBase64Byte(s[e-1]) {
		return e
	}
run:
	for e < len(s) {
		switch {
		case isBase64Byte(s[e]):
			e++
		case s[e] == '\\' && e+1 < len(s) && s[e+1] == '/': // JSON's escaped '/'
			e += 2
		case s[e] == '%' && e+2 < len(s) && s[e+1] == '2' && strings.IndexByte("bBfF", s[e+2]) >= 0: // query-escaped '+' and '/'
			e += 3
		default:
			break run
		}
	}
	for e < len(s) {
		switch {
		case s[e] == '=':
			e++
		case s[e] == '%' && e+2 < len(s) && s[e+1] == '3' && (s[e+2] == 'D' || s[e+2] == 'd'):
			e += 3
		default:
			return e
		}
	}
	return e
}

// isBase64Byte reports whether c is in the standard or URL base64
// alphabet.
func isBase64Byte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

// String returns s with every known form of every secret replaced by Marker.
func (r *Redactor) String(s string) string {
	if r.Empty() || s == "" {
		return s
	}
	spans := r.spans(s)
	if len(spans) == 0 {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s))
	replaceSpans(&sb, s, spans)
	return sb.String()
}

// Bytes is String for bytes, such as marshaled JSON (which stays valid).
// b is returned as it is when it holds no secret.
func (r *Redactor) Bytes(b []byte) []byte {
	if r.Empty() || len(b) == 0 {
		return b
	}
	// b is only read while it is scanned and copied.
	s := unsafe.String(unsafe.SliceData(b), len(b))
	spans := r.spans(s)
	if len(spans) == 0 {
		return b
	}
	var sb strings.Builder
	sb.Grow(len(b))
	replaceSpans(&sb, s, spans)
	return []byte(sb.String())
}

// Message returns s as an error message from elsewhere (a server's reply,
// an SDK's error) may be shown: redacted, trimmed of space, and cut to its
// first n bytes, kept valid UTF-8, with "…" marking the cut.
func (r *Redactor) Message(s string, n int) string {
	s = strings.TrimSpace(r.String(s))
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// Empty reports whether r replaces nothing.
func (r *Redactor) Empty() bool { return r == nil || len(r.layers) == 0 }

// Credential returns the credential part of an HTTP authorization value
// such as "Bearer abc" (abc), or "" when v is not one.
func Credential(v string) string {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !slices.Contains(credentialSchemes, strings.ToLower(scheme)) {
		return ""
	}
	return strings.TrimSpace(cred)
}

// Forms returns the forms of secret that a Redactor replaces, duplicates
// included.
func Forms(secret string) []string {
	if secret == "" {
		return nil
	}
	var out []string
	for _, c := range []string{secret, strings.ToLower(secret), strings.ToUpper(secret)} {
		out = append(out, c)
		out = append(out, jsonForms(c)...)
		out = append(out, urlForms(c)...)
	}
	if len(secret) >= minEncodedLen {
		out = append(out, encodedForms(secret)...)
	}
	return out
}

// minEncodedLen is the length from which a secret's base64 and hex forms
// are redacted too: those of a shorter value are short enough to occur in
// any text by chance.
const minEncodedLen = 4

// encodedForms are secret as binary-to-text encodings carry it: base64
// (standard and URL alphabets, padded or not) and hex (either case), each
// also as a URL query and a JSON string with '/' escaped carry it.
func encodedForms(secret string) []string {
	b := []byte(secret)
	var out []string
	add := func(f string) {
		out = append(out, f, url.QueryEscape(f), lowerHex(url.QueryEscape(f)), strings.ReplaceAll(f, "/", `\/`))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		add(enc.EncodeToString(b))
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for _, f := range innerForms(enc, b) {
			add(f)
		}
	}
	h := hex.EncodeToString(b)
	return append(out, h, strings.ToUpper(h))
}

// innerForms are the base64 characters that secret alone decides when it
// is encoded inside a longer text ("user:" + secret + "@host" in a Basic
// header an echoing host encodes whole), at each of the three offsets its
// first byte may fall on: what comes before mixes into the first
// characters, what comes after into the last, and the rest is the same
// whatever surrounds it. Forms under minInnerLen characters are left out:
// so short a run occurs in base64 text by chance.
func innerForms(enc *base64.Encoding, secret []byte) []string {
	var out []string
	for k := range 3 {
		if f := innerForm(enc, secret, k); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// innerForm is innerForms' form at offset k, "" when it is too short.
func innerForm(enc *base64.Encoding, secret []byte, k int) string {
	f := enc.EncodeToString(append(make([]byte, k, k+len(secret)), secret...))
	// k bytes before: k+1 characters hold some of them (none at k = 0).
	skip := 0
	if k > 0 {
		skip = k + 1
	}
	// The last character of a partial group mixes with the next byte.
	end := len(f)
	if (k+len(secret))%3 != 0 {
		end--
	}
	if end-skip < minInnerLen {
		return ""
	}
	return f[skip:end]
}

// innerLeads are the first leadLen bytes of secret's inner forms at
// offsets 1 and 2, where a character before them mixes the secret with
// the byte before, as each encoding of them that encodedForms lists
// begins (a Redactor's layer keeps them for leadStart).
func innerLeads(secret string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for k := 1; k < 3; k++ {
			f := innerForm(enc, []byte(secret), k)
			if f == "" {
				continue
			}
			for _, e := range []string{f, url.QueryEscape(f), lowerHex(url.QueryEscape(f)), strings.ReplaceAll(f, "/", `\/`)} {
				if len(e) >= leadLen {
					out = append(out, e[:leadLen])
				}
			}
		}
	}
	return out
}

// leadLen is how much of an inner form leadStart looks at: minInnerLen
// characters, the shortest form kept.
const leadLen = minInnerLen

// minInnerLen is the shortest innerForms kept.
const minInnerLen = 6

// jsonForms are c as it appears inside a JSON string: Go's escaping (HTML
// characters as \u003c), without HTML escaping, and either with '/'
// escaped as some other encoders do.
func jsonForms(c string) []string {
	var out []string
	if b, err := json.Marshal(c); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if enc.Encode(c) == nil {
		s := strings.TrimSuffix(sb.String(), "\n")
		out = append(out, s[1:len(s)-1])
	}
	for _, f := range out[:len(out):len(out)] {
		if strings.Contains(f, "/") {
			out = append(out, strings.ReplaceAll(f, "/", `\/`))
		}
	}
	return out
}

// urlForms are c percent-encoded the ways URLs carry it: query escaping
// ('+' for a space), path-segment and whole-path escaping, and every byte
// but the unreserved ones escaped with %20 for a space; each also with
// lower-case hex digits.
func urlForms(c string) []string {
	out := []string{url.QueryEscape(c), url.PathEscape(c), (&url.URL{Path: c}).EscapedPath(), escapeAll(c)}
	for _, f := range out[:len(out):len(out)] {
		out = append(out, lowerHex(f))
	}
	return out
}

// escapeAll percent-encodes every byte of s except the unreserved ones of
// RFC 3986.
func escapeAll(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// lowerHex lower-cases the hex digits of every %XX escape in s.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if 'A' <= b[j] && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
			i += 2
		}
	}
	return string(b)
}
