// Package tokens holds the bearer-token set a runner accepts and the errors
// every token source reports with.
//
// Tokens are kept and compared as SHA-256 digests in constant time, so the
// comparison leaks neither a token's content nor its length, and the set
// never holds the plain text.
package tokens

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"
)

// ErrUnknown reports a token that is not in the accepted set (a 401).
var ErrUnknown = errors.New("unknown bearer token")

// ErrUnavailable reports that the accepted set cannot be had right now, so no
// token can be checked (a 503: fail closed, never open).
var ErrUnavailable = errors.New("token source unavailable")

// Digest is the SHA-256 of a token.
type Digest [sha256.Size]byte

// Set is an immutable set of accepted token digests. The zero Set accepts
// nothing.
type Set struct {
	digests []Digest
}

// NewSet returns the set of the given tokens; empty strings and surrounding
// white space are dropped.
func NewSet(tokens ...string) Set {
	var s Set
	for _, t := range tokens {
		if t = strings.TrimSpace(t); t != "" {
			s.digests = append(s.digests, sha256.Sum256([]byte(t)))
		}
	}
	return s
}

// Len reports how many tokens the set holds.
func (s Set) Len() int { return len(s.digests) }

// Union returns a set holding the tokens of both.
func (s Set) Union(o Set) Set {
	out := Set{digests: make([]Digest, 0, len(s.digests)+len(o.digests))}
	out.digests = append(append(out.digests, s.digests...), o.digests...)
	return out
}

// Contains reports whether token is in the set. Every digest is compared, in
// constant time, whatever the answer.
func (s Set) Contains(token string) bool {
	d := sha256.Sum256([]byte(token))
	found := 0
	for i := range s.digests {
		found |= subtle.ConstantTimeCompare(d[:], s.digests[i][:])
	}
	return found == 1
}

// Static is a fixed token set, as configured by RUNNER_TOKENS or -dev.
type Static struct{ Set Set }

// Verify returns nil for an accepted token and ErrUnknown otherwise.
func (s Static) Verify(_ context.Context, token string) error {
	if token == "" || !s.Set.Contains(token) {
		return ErrUnknown
	}
	return nil
}
