package engine

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// maxDerivedSecrets bounds the distinct values an execution derives from
// its secrets and sends (see scrubber.learn): each one makes the redactor
// longer, and the redactor runs over every event and everything received.
const maxDerivedSecrets = 32

// scrubber is an execution's redactor. It knows the request's secrets
// (redact.Forms: cased, JSON- and URL-escaped, base64, hex) and, as the
// execution runs, the values the runner derived from them and sent: an
// http node's header or query value built from a secret, such as the
// base64 of "user:secret" of Basic authentication, which no form of the
// secret itself matches. Everything an execution receives passes through
// it before any node can read it (scrubbing at the door), and every event
// on the way out.
//
// The nil scrubber replaces nothing. It is safe for concurrent use.
type scrubber struct {
	cur atomic.Pointer[redact.Redactor]

	mu      sync.Mutex
	values  []string
	derived map[string]bool
}

// newScrubber returns the scrubber of the secret values.
func newScrubber(values []string) *scrubber {
	s := &scrubber{values: values, derived: map[string]bool{}}
	s.cur.Store(redact.New(values...))
	return s
}

func (s *scrubber) redactor() *redact.Redactor {
	if s == nil {
		return nil
	}
	return s.cur.Load()
}

// String returns v with every known form of every secret replaced.
func (s *scrubber) String(v string) string { return s.redactor().String(v) }

// Bytes is String for bytes, such as marshaled JSON.
func (s *scrubber) Bytes(b []byte) []byte { return s.redactor().Bytes(b) }

// Empty reports whether s replaces nothing.
func (s *scrubber) Empty() bool { return s.redactor().Empty() }

// learn adds values the runner derived from secrets and is about to send,
// so that an echo of them, in any form the redactor knows, is scrubbed
// like the secrets. Past maxDerivedSecrets distinct values it fails with
// LIMIT_EXCEEDED and the request is not sent.
func (s *scrubber) learn(values ...string) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	added := false
	for _, v := range values {
		// A value holding a known form of a secret already has it
		// redacted; only transformed ones are new.
		if v == "" || s.derived[v] || s.cur.Load().String(v) != v {
			continue
		}
		if len(s.derived) >= maxDerivedSecrets {
			return Errorf(protocol.CodeLimitExceeded, "more than %d distinct values built from secrets in one execution", maxDerivedSecrets)
		}
		s.derived[v] = true
		s.values = append(s.values, v)
		added = true
	}
	if added {
		s.cur.Store(redact.New(s.values...))
	}
	return nil
}

// value returns v, a decoded JSON value received from outside, with every
// string (object keys too) scrubbed. Values without a secret are returned
// as they are, shared.
func (s *scrubber) value(v any) any {
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
	}
	return v
}

// raw returns JSON received from outside with every secret replaced; the
// marker holds no character JSON escapes, so it stays valid JSON unless a
// secret matched across its syntax, when the text is masked whole.
func (s *scrubber) raw(b json.RawMessage) json.RawMessage {
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
