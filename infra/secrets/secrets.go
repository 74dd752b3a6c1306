// Package secrets is a bearer-token source backed by AWS Secrets Manager.
//
// The accepted tokens are the union of the secret's AWSCURRENT and
// AWSPREVIOUS versions, so putting a new secret value never breaks a server
// that still sends the old token: the old value becomes AWSPREVIOUS and stays
// accepted until the next rotation.
//
// A secret value holds tokens in one of these forms (surrounding white space
// is ignored everywhere):
//
//	tok-a                         a single token
//	tok-a,tok-b                   tokens separated by commas or line breaks
//	{"tokens":["tok-a","tok-b"]}  a JSON object with a "tokens" array
//	{"tokens":{"server-a":"tok-a","server-b":"tok-b"}}
//	                              one token per server, by name (Named)
//	["tok-a","tok-b"]             a JSON array of strings
//
// The named form is what `runnerctl token rotate --name` writes: it
// replaces one server's token and keeps the others'.
//
// The set is cached for Options.TTL. A token that is not in a fresh set
// triggers a refresh, at most once per Options.RefreshInterval, and
// concurrent refreshes share one round trip. When Secrets Manager fails the
// cached set keeps serving until its TTL runs out; after that every check
// fails closed with an error wrapping tokens.ErrUnavailable. No token or
// secret value ever appears in an error.
package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/runnerd/lambda-runner/infra/tokens"
)

// Staging labels of the secret versions whose tokens are accepted.
const (
	StageCurrent  = "AWSCURRENT"
	StagePrevious = "AWSPREVIOUS"
)

// Defaults for the zero values of Options.
const (
	DefaultTTL             = 5 * time.Minute
	DefaultRefreshInterval = 30 * time.Second
	DefaultTimeout         = 5 * time.Second
)

// Options configure a Source.
type Options struct {
	// SecretID is the name or ARN of the secret.
	SecretID string
	// TTL is how long a loaded token set is trusted, including while Secrets
	// Manager is unreachable. Default 5m.
	TTL time.Duration
	// RefreshInterval is the least time between two refreshes triggered by
	// unknown tokens, so a client guessing tokens cannot turn each guess
	// into a Secrets Manager call. Default 30s.
	RefreshInterval time.Duration
	// Timeout bounds one refresh (both versions, SDK retries included), so a
	// hanging Secrets Manager costs a request seconds, not the invocation.
	// Default 5s.
	Timeout time.Duration
	// Now returns the current time; tests replace it. Default time.Now.
	Now func() time.Time
}

// API is the part of the Secrets Manager client a Source uses;
// *secretsmanager.Client implements it.
type API interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Source verifies bearer tokens against a Secrets Manager secret. It is safe
// for concurrent use.
type Source struct {
	client API
	opt    Options

	mu       sync.Mutex
	set      tokens.Set
	expires  time.Time // the set is trusted before this instant; zero: never loaded
	lastLoad time.Time // when the last refresh attempt ended, success or not
	inflight *call     // the refresh in progress, shared by every caller
}

// call is one refresh shared by every caller that needs it.
type call struct {
	done chan struct{}
	err  error // set before done is closed
}

// New returns a Source reading o.SecretID through client. Nothing is fetched
// until the first Verify.
func New(client API, o Options) *Source {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Source{client: client, opt: o}
}

// Verify returns nil if token is accepted, tokens.ErrUnknown if it is not,
// and an error wrapping tokens.ErrUnavailable if no trusted token set can be
// had (never loaded, or expired, and Secrets Manager fails).
func (s *Source) Verify(ctx context.Context, token string) error {
	// Nothing could accept an empty token: don't spend a refresh on it.
	if token == "" {
		return tokens.ErrUnknown
	}

	s.mu.Lock()
	now := s.opt.Now()
	if s.fresh(now) {
		set := s.set
		// A miss refreshes only if one is running already or the last one
		// ended at least RefreshInterval ago; otherwise the answer stands.
		if set.Contains(token) || (s.inflight == nil && now.Sub(s.lastLoad) < s.opt.RefreshInterval) {
			s.mu.Unlock()
			return answer(set, token)
		}
	}
	c := s.inflight
	leader := c == nil
	if leader {
		c = &call{done: make(chan struct{})}
		s.inflight = c
	}
	s.mu.Unlock()

	if leader {
		s.refresh(ctx, c)
	} else {
		select {
		case <-c.done:
		case <-ctx.Done():
			// Fail closed: the caller gets no answer, so no acceptance.
			return fmt.Errorf("secrets: %w: waiting for refresh: %w", tokens.ErrUnavailable, ctx.Err())
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fresh(s.opt.Now()) {
		// A failed refresh leaves the cached set serving until its TTL.
		return answer(s.set, token)
	}
	err := c.err
	if err == nil {
		// Only a TTL shorter than the refresh itself gets here.
		err = errors.New("token set expired during refresh")
	}
	return fmt.Errorf("secrets: %w: %w", tokens.ErrUnavailable, err)
}

// fresh reports whether the cached set is trusted at now; s.mu is held.
func (s *Source) fresh(now time.Time) bool {
	return !s.expires.IsZero() && now.Before(s.expires)
}

func answer(set tokens.Set, token string) error {
	if set.Contains(token) {
		return nil
	}
	return tokens.ErrUnknown
}

// refresh loads the secret, installs the result and completes c.
func (s *Source) refresh(ctx context.Context, c *call) {
	// The load is shared with other callers, so the leader's cancellation
	// (say, its client went away) must not fail theirs; Timeout bounds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.Timeout)
	set, err := s.load(ctx)
	cancel()

	s.mu.Lock()
	now := s.opt.Now()
	s.lastLoad = now
	if err == nil {
		s.set = set
		s.expires = now.Add(s.opt.TTL)
	}
	s.inflight = nil
	c.err = err
	s.mu.Unlock()
	close(c.done)
}

// load fetches both staging labels at once and returns their union.
func (s *Source) load(ctx context.Context) (tokens.Set, error) {
	// A missing AWSPREVIOUS (a secret never rotated) contributes nothing.
	var (
		wg      sync.WaitGroup
		prev    []string
		prevErr error
	)
	wg.Go(func() { prev, _, prevErr = s.fetch(ctx, StagePrevious) })
	cur, curFound, curErr := s.fetch(ctx, StageCurrent)
	wg.Wait()

	switch {
	case curErr != nil:
		return tokens.Set{}, curErr
	case !curFound:
		return tokens.Set{}, fmt.Errorf("secret %q has no %s version", s.opt.SecretID, StageCurrent)
	case prevErr != nil:
		// Dropping the previous tokens on a transient failure would reject
		// servers in the middle of a rotation; keep the old set instead.
		return tokens.Set{}, prevErr
	}
	set := tokens.NewSet(append(cur, prev...)...)
	if set.Len() == 0 {
		return tokens.Set{}, fmt.Errorf("secret %q holds no tokens", s.opt.SecretID)
	}
	return set, nil
}

// fetch reads one staging label. found is false when the secret has no
// version with that label.
func (s *Source) fetch(ctx context.Context, stage string) (toks []string, found bool, err error) {
	out, err := s.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{
		SecretId:     aws.String(s.opt.SecretID),
		VersionStage: aws.String(stage),
	})
	if err != nil {
		var nf *types.ResourceNotFoundException
		if stage == StagePrevious && errors.As(err, &nf) {
			// A secret that was never rotated has no AWSPREVIOUS.
			return nil, false, nil
		}
		// SDK errors carry the operation, status and service message, never
		// the secret value.
		return nil, false, fmt.Errorf("reading %s of secret %q: %w", stage, s.opt.SecretID, err)
	}
	if out.SecretString == nil {
		if stage == StagePrevious {
			return nil, true, nil // see below
		}
		return nil, true, fmt.Errorf("%s of secret %q is binary; want a string", stage, s.opt.SecretID)
	}
	toks, err = Parse(*out.SecretString)
	if err != nil {
		if stage == StagePrevious {
			// The previous value only extends a rotation's grace period. If
			// it is unusable (say an operator fixed a bad value by putting a
			// good one), refusing the current tokens too would turn a
			// repaired mistake into an outage.
			return nil, true, nil
		}
		return nil, true, fmt.Errorf("%s of secret %q: %w", stage, s.opt.SecretID, err)
	}
	return toks, true, nil
}

// Parse returns the tokens held by a secret value in any of the forms the
// package documents. Its errors never quote the value.
func Parse(value string) ([]string, error) {
	v := strings.TrimSpace(value)
	switch {
	case v == "":
		return nil, nil
	case v[0] == '{':
		list, named, err := parseObject(v)
		if err != nil {
			return nil, err
		}
		if named == nil {
			return list, nil
		}
		// Sorted by name, so that a value always parses the same.
		names := slices.Sorted(maps.Keys(named))
		toks := make([]string, 0, len(names))
		for _, n := range names {
			toks = append(toks, named[n])
		}
		return toks, nil
	case v[0] == '[':
		var list []string
		if err := json.Unmarshal([]byte(v), &list); err != nil {
			return nil, errors.New(`secret value starts with "[" but is not a JSON array of strings`)
		}
		return list, nil
	}
	return strings.FieldsFunc(v, func(r rune) bool {
		return r == ',' || r == '\n' || r == '\r'
	}), nil
}

// Named returns the tokens of a secret value in the named form,
// {"tokens":{"<name>":"<token>",...}}, by name; ok is false for a value in
// any other form (whose tokens Parse returns). Its errors never quote the
// value, nor a token; they may name a server.
func Named(value string) (named map[string]string, ok bool, err error) {
	v := strings.TrimSpace(value)
	if v == "" || v[0] != '{' {
		return nil, false, nil
	}
	_, named, err = parseObject(v)
	if err != nil || named == nil {
		return nil, false, err
	}
	return named, true, nil
}

// parseObject reads {"tokens": [...]} (list) or {"tokens": {...}} (named).
func parseObject(v string) (list []string, named map[string]string, err error) {
	var doc struct {
		Tokens json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(v), &doc); err != nil {
		return nil, nil, errors.New(`secret value starts with "{" but is not a JSON object of the form {"tokens":["..."]} or {"tokens":{"<server>":"..."}}`)
	}
	raw := bytes.TrimSpace(doc.Tokens)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return nil, nil, errors.New(`secret JSON object has no "tokens" array or object`)
	case raw[0] == '[':
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, nil, errors.New(`secret JSON "tokens" is not an array of strings`)
		}
		return list, nil, nil
	case raw[0] == '{':
		if err := json.Unmarshal(raw, &named); err != nil {
			return nil, nil, errors.New(`secret JSON "tokens" is not an object of server names to token strings`)
		}
		if named == nil {
			named = map[string]string{}
		}
		return nil, named, nil
	}
	return nil, nil, errors.New(`secret JSON "tokens" is neither an array of strings nor an object of server names to tokens`)
}
