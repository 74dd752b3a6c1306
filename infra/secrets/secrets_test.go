package secrets_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"go.uber.org/goleak"

	"github.com/runnerd/lambda-runner/infra/secrets"
	"github.com/runnerd/lambda-runner/infra/tokens"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const secretID = "runner-tokens"

// version is what the fake holds under one staging label.
type version struct {
	str    string
	binary []byte // when set, the version is binary
}

// fakeSM speaks enough of Secrets Manager's JSON 1.1 protocol for
// GetSecretValue: POST /, X-Amz-Target secretsmanager.GetSecretValue.
type fakeSM struct {
	t *testing.T

	mu       sync.Mutex
	versions map[string]version // by staging label; absent: no such version
	failWith int                // when non-zero, answer with this status
	errType  string             // __type of that failure
	failOnly string             // when set, only this staging label fails
	calls    map[string]int     // GetSecretValue requests by staging label
	gate     chan struct{}      // when non-nil, requests wait for it to close
	arrived  chan struct{}      // when non-nil, receives on each request
}

func newFake(t *testing.T) (*fakeSM, *secretsmanager.Client) {
	f := &fakeSM{t: t, versions: map[string]version{}, calls: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := aws.Config{
		Region:      "eu-west-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret-key", ""),
		HTTPClient:  srv.Client(),
		// Exact call counts are asserted below; the SDK's own retries
		// would multiply them.
		Retryer: func() aws.Retryer { return aws.NopRetryer{} },
	}
	client := secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
	})
	return f, client
}

func (f *fakeSM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/" ||
		r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" ||
		!strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-amz-json-1.1") ||
		!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		f.t.Errorf("unexpected request %s %s target=%q type=%q", r.Method, r.URL.Path,
			r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var in struct{ SecretId, VersionStage string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.SecretId != secretID {
		f.t.Errorf("bad body: %v, SecretId %q", err, in.SecretId)
	}

	f.mu.Lock()
	f.calls[in.VersionStage]++
	gate, arrived := f.gate, f.arrived
	f.mu.Unlock()
	if arrived != nil {
		arrived <- struct{}{}
	}
	if gate != nil {
		<-gate
	}

	f.mu.Lock()
	v, ok := f.versions[in.VersionStage]
	failWith, errType := f.failWith, f.errType
	if f.failOnly != "" && f.failOnly != in.VersionStage {
		failWith = 0
	}
	f.mu.Unlock()

	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch {
	case failWith != 0:
		w.WriteHeader(failWith)
		json.NewEncoder(w).Encode(map[string]string{"__type": errType, "message": "injected failure"})
	case !ok:
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{
			"__type":  "ResourceNotFoundException",
			"message": "Secrets Manager can't find the specified secret value for staging label: " + in.VersionStage,
		})
	default:
		out := map[string]any{
			"ARN":           "arn:aws:secretsmanager:eu-west-1:123456789012:secret:" + secretID + "-AbCdEf",
			"Name":          secretID,
			"VersionId":     "v-" + in.VersionStage,
			"VersionStages": []string{in.VersionStage},
		}
		if v.binary != nil {
			out["SecretBinary"] = base64.StdEncoding.EncodeToString(v.binary)
		} else {
			out["SecretString"] = v.str
		}
		json.NewEncoder(w).Encode(out)
	}
}

// set replaces the versions: current, then optionally previous.
func (f *fakeSM) set(current string, previous ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions = map[string]version{secrets.StageCurrent: {str: current}}
	if len(previous) > 0 {
		f.versions[secrets.StagePrevious] = version{str: previous[0]}
	}
}

func (f *fakeSM) fail(status int, errType string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWith, f.errType = status, errType
}

// refreshes counts loads: each one reads AWSCURRENT exactly once.
func (f *fakeSM) refreshes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[secrets.StageCurrent]
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const (
	ttl      = 5 * time.Minute
	interval = 30 * time.Second
)

func newSource(client secrets.API) (*secrets.Source, *clock) {
	clk := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	return secrets.New(client, secrets.Options{
		SecretID: secretID, TTL: ttl, RefreshInterval: interval, Now: clk.Now,
	}), clk
}

// check asserts what Verify says about token: nil, tokens.ErrUnknown or
// tokens.ErrUnavailable. Errors must never quote a token.
func check(t *testing.T, s *secrets.Source, token string, want error) {
	t.Helper()
	err := s.Verify(context.Background(), token)
	switch {
	case want == nil && err != nil:
		t.Errorf("Verify(%q) = %v, want accepted", token, err)
	case want != nil && !errors.Is(err, want):
		t.Errorf("Verify(%q) = %v, want %v", token, err, want)
	case errors.Is(err, tokens.ErrUnknown) && errors.Is(err, tokens.ErrUnavailable):
		t.Errorf("Verify(%q) = %v: both unknown and unavailable", token, err)
	}
	if err != nil && token != "" && strings.Contains(err.Error(), token) {
		t.Errorf("error %q quotes the token", err)
	}
}

func TestValueFormats(t *testing.T) {
	tests := []struct {
		name     string
		value    string
		accepted []string
		rejected []string
	}{
		{"plain", "tok-a", []string{"tok-a"}, []string{"tok-b", "tok-", "tok-a "}},
		{"plain with white space", "  tok-a \n", []string{"tok-a"}, []string{" tok-a"}},
		{"comma separated", "tok-a, tok-b ,tok-c,", []string{"tok-a", "tok-b", "tok-c"}, []string{"tok-a, tok-b", "tok-d"}},
		{"line separated", "tok-a\r\ntok-b\n", []string{"tok-a", "tok-b"}, []string{"tok-a\r\ntok-b"}},
		{"json object", ` {"tokens": [" tok-a", "tok-b"], "note": "ignored"} `, []string{"tok-a", "tok-b"}, []string{"note", "ignored", "tokens"}},
		{"json array", `["tok-a","tok-b"]`, []string{"tok-a", "tok-b"}, []string{`["tok-a","tok-b"]`}},
		{"named json object", ` {"tokens": {"server-a": " tok-a", "server-b": "tok-b"}, "note": "x"} `,
			[]string{"tok-a", "tok-b"}, []string{"server-a", "server-b", "note", "x", "tokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, client := newFake(t)
			f.set(tt.value)
			s, _ := newSource(client)
			for _, tok := range tt.accepted {
				check(t, s, tok, nil)
			}
			for _, tok := range tt.rejected {
				check(t, s, tok, tokens.ErrUnknown)
			}
		})
	}
}

// An unusable AWSCURRENT is an outage, never an open door, and the error
// must not quote the value.
func TestBadCurrentValue(t *testing.T) {
	tests := []struct {
		name string
		v    version
	}{
		{"empty", version{str: "  "}},
		{"only separators", version{str: ", ,\n"}},
		{"broken json object", version{str: `{"tokens": ["hunter2"`}},
		{"object without tokens", version{str: `{"token": "hunter2"}`}},
		{"tokens not strings", version{str: `{"tokens": [1, 2]}`}},
		{"array not strings", version{str: `["hunter2", 3]`}},
		{"empty tokens", version{str: `{"tokens": []}`}},
		{"empty named tokens", version{str: `{"tokens": {}}`}},
		{"named token not a string", version{str: `{"tokens": {"server-a": 1, "b": "hunter2"}}`}},
		{"tokens a string", version{str: `{"tokens": "hunter2"}`}},
		{"tokens null", version{str: `{"tokens": null, "t": "hunter2"}`}},
		{"binary", version{binary: []byte("hunter2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, client := newFake(t)
			f.versions[secrets.StageCurrent] = tt.v
			s, _ := newSource(client)
			err := s.Verify(context.Background(), "hunter2")
			if !errors.Is(err, tokens.ErrUnavailable) {
				t.Fatalf("Verify = %v, want ErrUnavailable", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q quotes the secret value", err)
			}
		})
	}
}

func TestStagingLabels(t *testing.T) {
	tests := []struct {
		name     string
		current  version
		previous *version
		accepted []string
		rejected []string
	}{
		{
			name:     "both labels",
			current:  version{str: "new"},
			previous: &version{str: "old-1,old-2"},
			accepted: []string{"new", "old-1", "old-2"},
			rejected: []string{"other"},
		},
		{
			name:     "formats may differ between versions",
			current:  version{str: `{"tokens":["new"]}`},
			previous: &version{str: "old"},
			accepted: []string{"new", "old"},
		},
		{
			name:     "no previous version",
			current:  version{str: "new"},
			accepted: []string{"new"},
			rejected: []string{"old"},
		},
		{
			name:     "unparsable previous is ignored",
			current:  version{str: "new"},
			previous: &version{str: `{"tokens":`},
			accepted: []string{"new"},
		},
		{
			name:     "binary previous is ignored",
			current:  version{str: "new"},
			previous: &version{binary: []byte("old")},
			accepted: []string{"new"},
			rejected: []string{"old"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, client := newFake(t)
			f.versions[secrets.StageCurrent] = tt.current
			if tt.previous != nil {
				f.versions[secrets.StagePrevious] = *tt.previous
			}
			s, _ := newSource(client)
			for _, tok := range tt.accepted {
				check(t, s, tok, nil)
			}
			for _, tok := range tt.rejected {
				check(t, s, tok, tokens.ErrUnknown)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.calls[secrets.StageCurrent] != 1 || f.calls[secrets.StagePrevious] != 1 {
				t.Errorf("calls = %v, want one per staging label", f.calls)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	f, client := newFake(t)
	f.set("t1")
	s, clk := newSource(client)
	check(t, s, "t1", nil)

	// put-secret-value: t2 becomes AWSCURRENT, t1 AWSPREVIOUS.
	f.set("t2", "t1")
	// Loaded a moment ago: the miss does not refresh yet.
	check(t, s, "t2", tokens.ErrUnknown)
	if n := f.refreshes(); n != 1 {
		t.Fatalf("refreshes = %d, want 1 (no refresh within the interval)", n)
	}

	clk.Advance(interval)
	check(t, s, "t2", nil) // the miss refreshed
	check(t, s, "t1", nil) // still accepted as AWSPREVIOUS
	if n := f.refreshes(); n != 2 {
		t.Fatalf("refreshes = %d, want 2", n)
	}

	// A second rotation retires t1.
	f.set("t3", "t2")
	clk.Advance(interval)
	check(t, s, "t3", nil)
	check(t, s, "t2", nil)
	check(t, s, "t1", tokens.ErrUnknown)
	if n := f.refreshes(); n != 3 {
		t.Fatalf("refreshes = %d, want 3", n)
	}

	// Past the TTL the set reloads even without a miss.
	f.set("t4", "t3")
	clk.Advance(ttl)
	check(t, s, "t2", tokens.ErrUnknown)
	check(t, s, "t4", nil)
	if n := f.refreshes(); n != 4 {
		t.Fatalf("refreshes = %d, want 4", n)
	}
}

func TestUnknownTokensRefreshAtMostOncePerInterval(t *testing.T) {
	f, client := newFake(t)
	f.set("good")
	s, clk := newSource(client)
	check(t, s, "good", nil)

	for round := 1; round <= 3; round++ {
		clk.Advance(interval)
		for i := range 25 {
			check(t, s, "guess-"+strings.Repeat("x", i), tokens.ErrUnknown)
			clk.Advance(interval / 100)
		}
		check(t, s, "good", nil)
		if got, want := f.refreshes(), 1+round; got != want {
			t.Fatalf("round %d: refreshes = %d, want %d", round, got, want)
		}
	}

	// The empty token is never worth a call, even on a cold source.
	f2, client2 := newFake(t)
	f2.set("good")
	s2, _ := newSource(client2)
	check(t, s2, "", tokens.ErrUnknown)
	if n := f2.refreshes(); n != 0 {
		t.Errorf("empty token caused %d refreshes", n)
	}
}

// Concurrent misses share one call: whether a goroutine joins the call in
// flight or comes after it, exactly one request is made.
func TestConcurrentMissesShareOneCall(t *testing.T) {
	tests := []struct {
		name  string
		warm  bool
		token string
		want  error
	}{
		{"cold start, valid token", false, "good", nil},
		{"warm, unknown tokens", true, "guess", tokens.ErrUnknown},
		{"warm, rotated token", true, "rotated", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, client := newFake(t)
			f.set("good")
			s, clk := newSource(client)
			before := 0
			if tt.warm {
				check(t, s, "good", nil)
				clk.Advance(interval)
				before = 1
			}
			f.set("good,rotated")

			gate, arrived := make(chan struct{}), make(chan struct{}, 64)
			f.mu.Lock()
			f.gate, f.arrived = gate, arrived
			f.mu.Unlock()

			const n = 32
			errs := make(chan error, n)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() { errs <- s.Verify(context.Background(), tt.token) })
			}
			<-arrived // the one call is in flight; give the rest time to pile up
			time.Sleep(50 * time.Millisecond)
			close(gate)
			wg.Wait()
			close(errs)
			for err := range errs {
				if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
					t.Errorf("Verify = %v, want %v", err, tt.want)
				}
			}
			if got := f.refreshes() - before; got != 1 {
				t.Errorf("%d concurrent misses made %d refreshes, want 1", n, got)
			}
		})
	}
}

func TestOutageWithWarmCache(t *testing.T) {
	f, client := newFake(t)
	f.set("good")
	s, clk := newSource(client)
	check(t, s, "good", nil)

	f.fail(http.StatusInternalServerError, "InternalServiceError")
	clk.Advance(interval)
	check(t, s, "good", nil)                   // served from the cache
	check(t, s, "stranger", tokens.ErrUnknown) // the refresh fails; the cache still answers
	if n := f.refreshes(); n != 2 {
		t.Fatalf("refreshes = %d, want 2", n)
	}

	clk.Advance(ttl - interval - time.Second)
	check(t, s, "good", nil) // last second of the TTL
	clk.Advance(time.Second)
	check(t, s, "good", tokens.ErrUnavailable) // expired: fail closed
	check(t, s, "stranger", tokens.ErrUnavailable)

	f.fail(0, "")
	check(t, s, "good", nil) // recovered on the next request
}

func TestOutageWithColdCache(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		errType string
	}{
		{"server error", http.StatusInternalServerError, "InternalServiceError"},
		{"throttled", http.StatusBadRequest, "ThrottlingException"},
		{"access denied", http.StatusBadRequest, "AccessDeniedException"},
		{"kms failure", http.StatusBadRequest, "DecryptionFailure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, client := newFake(t)
			f.set("good")
			f.fail(tt.status, tt.errType)
			s, _ := newSource(client)
			for range 3 {
				check(t, s, "good", tokens.ErrUnavailable)
				check(t, s, "bad", tokens.ErrUnavailable)
			}
		})
	}

	t.Run("secret has no AWSCURRENT", func(t *testing.T) {
		f, client := newFake(t)
		f.versions[secrets.StagePrevious] = version{str: "old"}
		s, _ := newSource(client)
		check(t, s, "old", tokens.ErrUnavailable)
	})

	t.Run("previous version unreadable", func(t *testing.T) {
		// Accepting only the current tokens on a transient failure of the
		// other call would cut servers off mid-rotation.
		f, client := newFake(t)
		f.set("new", "old")
		f.fail(http.StatusInternalServerError, "InternalServiceError")
		f.failOnly = secrets.StagePrevious
		s, _ := newSource(client)
		check(t, s, "new", tokens.ErrUnavailable)
		check(t, s, "old", tokens.ErrUnavailable)
	})

	t.Run("hanging service", func(t *testing.T) {
		f, client := newFake(t)
		f.set("good")
		gate := make(chan struct{})
		f.mu.Lock()
		f.gate = gate
		f.mu.Unlock()
		defer close(gate)
		s := secrets.New(client, secrets.Options{SecretID: secretID, Timeout: 50 * time.Millisecond})
		check(t, s, "good", tokens.ErrUnavailable)
	})
}

func TestExpiryThenOutage(t *testing.T) {
	f, client := newFake(t)
	f.set("good")
	s, clk := newSource(client)
	check(t, s, "good", nil)

	clk.Advance(ttl)
	f.fail(http.StatusServiceUnavailable, "ServiceUnavailable")
	for range 3 {
		check(t, s, "good", tokens.ErrUnavailable)
		clk.Advance(interval)
	}
}

// A leader whose own request is cancelled still completes the shared load.
func TestCancelledCallerStillLoads(t *testing.T) {
	f, client := newFake(t)
	f.set("good")
	s, _ := newSource(client)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Verify(ctx, "good"); err != nil {
		t.Fatalf("Verify = %v", err)
	}
	if n := f.refreshes(); n != 1 {
		t.Fatalf("refreshes = %d", n)
	}
}

// Named reads the named form and only it; Parse returns the same tokens.
func TestNamed(t *testing.T) {
	tests := []struct {
		value string
		want  map[string]string
		ok    bool
		err   bool
	}{
		{`{"tokens":{"server-a":"tok-a","server-b":"tok-b"}}`, map[string]string{"server-a": "tok-a", "server-b": "tok-b"}, true, false},
		{` {"tokens":{}} `, map[string]string{}, true, false},
		{`{"tokens":["tok-a"]}`, nil, false, false},
		{`["tok-a"]`, nil, false, false},
		{`tok-a,tok-b`, nil, false, false},
		{``, nil, false, false},
		{`{"tokens":{"server-a":["hunter2"]}}`, nil, false, true},
		{`{"tokens":`, nil, false, true},
	}
	for _, tt := range tests {
		got, ok, err := secrets.Named(tt.value)
		if (err != nil) != tt.err || ok != tt.ok || !maps.Equal(got, tt.want) {
			t.Errorf("Named(%q) = %v, %v, %v; want %v, %v, error %v", tt.value, got, ok, err, tt.want, tt.ok, tt.err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Named(%q): error %q quotes a token", tt.value, err)
		}
		if ok {
			list, err := secrets.Parse(tt.value)
			if err != nil || !slices.Equal(slices.Sorted(slices.Values(list)), slices.Sorted(maps.Values(got))) {
				t.Errorf("Parse(%q) = %v, %v; Named gave %v", tt.value, list, err, got)
			}
		}
	}
}

// Parse and Named never panic, agree with each other, and never quote the
// value in an error.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"tok-a", "tok-a, tok-b\n", `{"tokens":["a","b"]}`, `{"tokens":{"s":"a"}}`, `["a"]`, `{"tokens":{"s":1}}`, `{`, `[`, `{"tokens":null}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		list, perr := secrets.Parse(value)
		named, ok, nerr := secrets.Named(value)
		for _, err := range []error{perr, nerr} {
			if err != nil && len(strings.TrimSpace(value)) > 8 && strings.Contains(err.Error(), strings.TrimSpace(value)) {
				t.Errorf("error %q quotes the value", err)
			}
		}
		if ok && (perr != nil || len(list) != len(named)) {
			t.Errorf("Named ok with %d tokens, Parse %d tokens, %v", len(named), len(list), perr)
		}
	})
}
