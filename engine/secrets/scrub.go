// Package secrets holds an execution's secret machinery: the scrubber that
// replaces every known form of the request's secrets (and of the values
// the runner derived from them and sent) in what an execution receives
// and emits, its sharing with a distributed map's batches, the shadows and
// windows a template that reads secrets is evaluated with first, and the
// taint rule's entry points the engine asks (which templates read secrets,
// in which scope they may). The rule itself, what an expression may do
// with a secret, is the expression language's (engine/lang/secret.go).
//
// It knows nothing of the engine: the engine builds one Scrubber per
// execution, calls it at the door and on the way out, and turns its
// errors into node errors.
package secrets

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// The bounds of what an execution's redactor is built from. The values an
// execution derives from its secrets are chosen by its author, so they are
// bounded in number and size; both are measured on the values' shadows
// (see DerivedPart), with every secret MaxSecretBytes long, so that no
// refusal depends on a secret's length, nor on its value (issue 18, class
// 7).
const (
	// maxDerivedSecrets bounds the distinct values an execution derives
	// from its secrets and sends (see Scrubber.Learn), told apart by their
	// shadows.
	maxDerivedSecrets = 32
	// maxDerivedBytes bounds one of them, and maxDerivedTotal all of them
	// together, counted on their shadows.
	maxDerivedBytes = 16 << 10
	maxDerivedTotal = 128 << 10
	// maxLearned bounds the values the redactor learns: as many as the
	// shadows tell apart, unless a value picks its secret by a name
	// computed at run time (secrets[input.name]), whose shadows are all
	// alike; and their bytes together, the redactor's cost.
	maxLearned      = 8 * maxDerivedSecrets
	maxLearnedBytes = 4 * maxDerivedTotal
	// MaxSecretBytes bounds one runtime.http.secrets value: every
	// evaluation that reads secrets is checked first with each secret that
	// long (see Shadows).
	MaxSecretBytes = 4 << 10
	// MaxSecretsBytes bounds the secret values of a request together.
	MaxSecretsBytes = 64 << 10
)

// Scrubber is an execution's redactor. It knows the request's secrets
// (redact.Forms: cased, JSON- and URL-escaped, base64, hex) and, as the
// execution runs, the values the runner derived from them and sent: the
// part of an http node's header or query value that its secrets decided,
// such as the base64 of "user:secret" of Basic authentication, which no
// form of the secret itself matches. Everything an execution receives
// passes through it before any node can read it (scrubbing at the door),
// and every event on the way out.
//
// The nil Scrubber replaces nothing. It is safe for concurrent use.
type Scrubber struct {
	cur atomic.Pointer[redact.Redactor]

	mu sync.Mutex
	// keys are the derived values' shadows (see Derived.Key), worst their
	// lengths together; derived are the values learned, learnedBytes
	// their lengths together.
	keys         map[string]bool
	worst        int
	derived      map[string]bool
	learnedBytes int
	// plain are the secret values themselves: a value sent that is one
	// of them has no form the redactor does not know already.
	plain map[string]bool

	// Distributed maps (share.go). caps are the totals Learn may
	// reach, less reserved: the shares a parent has handed its running
	// batches. In a child, caps are where the parent was plus the batch's
	// share; report tells the parent what Learn adds, before Learn
	// returns, and since keeps it for the batch's end.
	caps     Caps
	reserved Caps
	shared   bool
	report   func(Learned) error
	since    Learned
}

// New returns the Scrubber of the secret values.
func New(values []string) *Scrubber {
	s := &Scrubber{keys: map[string]bool{}, derived: map[string]bool{}, plain: map[string]bool{}, caps: executionCaps}
	for _, v := range values {
		s.plain[v] = true
	}
	s.cur.Store(redact.New(values...))
	return s
}

func (s *Scrubber) redactor() *redact.Redactor {
	if s == nil {
		return nil
	}
	return s.cur.Load()
}

// String returns v with every known form of every secret replaced.
func (s *Scrubber) String(v string) string { return s.redactor().String(v) }

// Bytes is String for bytes, such as marshaled JSON.
func (s *Scrubber) Bytes(b []byte) []byte { return s.redactor().Bytes(b) }

// Empty reports whether s replaces nothing.
func (s *Scrubber) Empty() bool { return s.redactor().Empty() }

// Error is a refusal of the machinery: a bound on what an execution
// learns from its secrets, or a batch's report its parent could not take.
// The engine fails the node with its Code and Message.
type Error struct {
	Code    protocol.Code
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(code protocol.Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Derived is the part of a value about to be sent that the execution's
// secrets decided (see DerivedPart).
type Derived struct {
	// Value is that part, as sent.
	Value string
	// Key is that part of the value with the secrets' first shadows:
	// what tells derived values apart, and whose length bounds Value's,
	// whatever the secrets.
	Key string
}

// Learn adds values the runner derived from secrets and is about to send,
// so that an echo of them, in any form the redactor knows, is scrubbed
// like the secrets. Past maxDerivedSecrets distinct values, or one longer
// than maxDerivedBytes or all longer than maxDerivedTotal, all counted on
// the shadows, it fails with LIMIT_EXCEEDED and the request is not sent;
// nothing is added then.
func (s *Scrubber) Learn(values ...Derived) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	capKeys, capWorst := s.caps.Keys-s.reserved.Keys, s.caps.Worst-s.reserved.Worst
	capValues, capBytes := s.caps.Values-s.reserved.Values, s.caps.Bytes-s.reserved.Bytes
	var keys []string
	worst := s.worst
	for _, d := range values {
		if d.Key == "" && d.Value == "" {
			continue
		}
		if len(d.Key) > maxDerivedBytes {
			return errorf(protocol.CodeLimitExceeded, "a value built from secrets may be at most %d bytes long, counted with every secret %d bytes long (whatever its length)", maxDerivedBytes, MaxSecretBytes)
		}
		if s.keys[d.Key] || slices.Contains(keys, d.Key) {
			continue
		}
		if len(s.keys)+len(keys) >= capKeys {
			return errorf(protocol.CodeLimitExceeded, "more than %d distinct values built from secrets in one execution%s", maxDerivedSecrets, s.shareNote())
		}
		if worst += len(d.Key); worst > capWorst {
			return errorf(protocol.CodeLimitExceeded, "the values built from secrets in one execution may be at most %d bytes long together, counted with every secret %d bytes long (whatever its length)%s", maxDerivedTotal, MaxSecretBytes, s.shareNote())
		}
		keys = append(keys, d.Key)
	}
	var added []string
	learned := s.learnedBytes
	for _, d := range values {
		v := d.Value
		// A secret itself has no form the redactor lacks; anything else
		// is learned, even when it is made of known forms of secrets
		// alone: the base64 of "ci:" + secret is the secret's own base64
		// (the prefix is three bytes), redacted as it is, but a host that
		// echoes the header hex- or base64-encoded again shows forms of
		// the credential, not of the secret.
		if v == "" || s.derived[v] || slices.Contains(added, v) || s.plain[v] {
			continue
		}
		// The secret rule keeps a value no longer than its shadow and
		// gives each shadow as many values as secrets may be picked by
		// name at run time: these bound the redactor's cost all the same.
		if learned += len(v); len(s.derived)+len(added) >= capValues || learned > capBytes {
			return errorf(protocol.CodeLimitExceeded, "more than %d values built from secrets, or %d bytes of them, in one execution%s", maxLearned, maxLearnedBytes, s.shareNote())
		}
		added = append(added, v)
	}
	for _, k := range keys {
		s.keys[k] = true
	}
	s.worst = worst
	for _, v := range added {
		s.derived[v] = true
	}
	s.learnedBytes = learned
	if len(added) > 0 {
		// Incremental: the values already known are not rebuilt (see
		// redact.Redactor.With).
		s.cur.Store(s.cur.Load().With(added...))
	}
	if len(keys) > 0 || len(added) > 0 {
		// A batch of a distributed map: the parent learns them too,
		// before the request that carries them is sent.
		return s.reported(keys, added)
	}
	return nil
}

// The bytes of the two shadows of every secret (see Shadows): '*'
// and 'U' differ in each of the seven low bits, so that every character
// of a value the secret reaches, placed or base64-encoded, differs
// between the two shadows of the value.
const shadowBytes = "*U"

// Shadows returns values with each secret replaced by its i'th
// shadow: MaxSecretBytes copies of shadowBytes[i]. An http node evaluates
// each template that reads secrets with both shadows before it evaluates
// it with the secrets: what the secret rule lets an expression do with a
// secret (place it, concatenate it, base64-encode it) costs no less with
// a longer secret, so a budget the shadows pass the secrets pass too, and
// an evaluation fails, if it fails, whatever the secrets' lengths.
func Shadows(values map[string]any, i int) map[string]any {
	if len(values) == 0 {
		return values
	}
	shadow := strings.Repeat(shadowBytes[i:i+1], MaxSecretBytes)
	out := make(map[string]any, len(values))
	for k := range values {
		out[k] = shadow
	}
	return out
}

// Windows returns values with each secret replaced by as many
// copies of shadowBytes[i] as it is long: evaluated with them, a value
// has the secrets' own layout (every base64 group aligned as with the
// secrets), and differs from the value sent only where the secrets reach
// it (see DerivedPart). What they decide is never shown: they only find
// what to learn.
func Windows(values map[string]any, i int) map[string]any {
	out := make(map[string]any, len(values))
	for k, v := range values {
		s, _ := v.(string)
		out[k] = strings.Repeat(shadowBytes[i:i+1], len(s))
	}
	return out
}

// DerivedPart returns the part of a string value sent that its secrets
// decided: what lies between the prefix and the suffix the value shares
// with both of its windows (the value as the secrets' windows make it).
// Text the secrets do not reach — literal text, an input, a value chosen
// by `??` — is the same in all three and is not learned; `'qT' ??
// secrets.k` derives nothing. Its key is the same part of the first
// shadow, found between the two shadows: the secrets change nothing of it,
// and its length bounds the part's, as the secret rule only places and
// encodes secrets, so a secret that is shorter reaches no more of a value.
func DerivedPart(value, win1, win2, sh1, sh2 string) Derived {
	p := min(commonPrefix(value, win1), commonPrefix(value, win2))
	q := min(commonSuffix(value, win1), commonSuffix(value, win2), len(value)-p)
	wp := commonPrefix(sh1, sh2)
	wq := min(commonSuffix(sh1, sh2), len(sh1)-wp, len(sh2)-wp)
	return Derived{Value: value[p : len(value)-q], Key: sh1[wp : len(sh1)-wq]}
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func commonSuffix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// Value returns v, a decoded JSON value received from outside, with every
// string (object keys too) scrubbed. Values without a secret are returned
// as they are, shared.
func (s *Scrubber) Value(v any) any {
	r := s.redactor()
	if r.Empty() {
		return v
	}
	return scrubValue(r, v)
}

func scrubValue(r *redact.Redactor, v any) any {
	switch v := v.(type) {
	case string:
		return r.String(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[r.String(k)] = scrubValue(r, e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = scrubValue(r, e)
		}
		return out
	case float64:
		// A secret of digits echoed as a number: no string of the reply
		// holds it, and arithmetic on it would carry it out.
		if text := strconv.FormatFloat(v, 'f', -1, 64); r.String(text) != text {
			return redact.Marker
		}
	}
	return v
}

// Raw returns JSON received from outside with every secret replaced; the
// marker holds no character JSON escapes, so it stays valid JSON unless a
// secret matched across its syntax, when the text is masked whole.
func (s *Scrubber) Raw(b json.RawMessage) json.RawMessage {
	r := s.redactor()
	if r.Empty() {
		return b
	}
	out := r.Bytes(b)
	if !json.Valid(out) {
		m, _ := json.Marshal(redact.Marker)
		return m
	}
	return out
}

// InRequest lists every secret value a request carries: HTTP secrets, model
// API keys and headers, toolset headers.
func InRequest(req *protocol.ExecutionRequest) []string {
	var out []string
	for _, s := range req.Runtime.HTTP.Secrets {
		out = append(out, s.Value)
	}
	for _, m := range req.Runtime.Models {
		out = append(out, m.APIKey)
		for _, v := range m.Headers {
			out = append(out, v)
		}
	}
	for _, t := range req.Runtime.Toolsets {
		for _, v := range t.Headers {
			out = append(out, v)
		}
	}
	return out
}
