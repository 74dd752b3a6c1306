//go:build !noopenai && !noanthropic && !nobedrock

package models

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// reply is one scripted answer of a fake provider.
type reply struct {
	status int
	header map[string]string
	body   string
	// wait delays the answer until the request's context ends or this
	// elapses, to test deadlines.
	wait time.Duration
}

// recorded is one request a fake provider received.
type recorded struct {
	method string
	path   string
	header http.Header
	body   []byte
	at     time.Time
}

// json decodes the request body as an object.
func (r recorded) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("request body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// fakeServer is an httptest server that answers with scripted replies, the
// last one repeating, and records every request.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []reply
	requests []recorded
}

// newFakeServer starts a fake provider for the test; tls serves HTTPS,
// which Bedrock's bearer-token signer requires.
func newFakeServer(t *testing.T, tls bool, replies ...reply) *fakeServer {
	t.Helper()
	f := &fakeServer{replies: replies}
	h := http.HandlerFunc(f.serve)
	if tls {
		f.Server = httptest.NewTLSServer(h)
	} else {
		f.Server = httptest.NewServer(h)
	}
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, recorded{
		method: r.Method, path: r.URL.EscapedPath(), header: r.Header.Clone(), body: body, at: time.Now(),
	})
	rep := f.replies[min(len(f.requests), len(f.replies))-1]
	f.mu.Unlock()
	if rep.wait > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(rep.wait):
		}
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, rep.body)
}

// received returns the requests so far.
func (f *fakeServer) received() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

// only returns the single request received, failing the test otherwise.
func (f *fakeServer) only(t *testing.T) recorded {
	t.Helper()
	reqs := f.received()
	if len(reqs) != 1 {
		t.Fatalf("server received %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// client returns an HTTP client for the server whose idle connections are
// closed when the test ends, so goleak sees no stray goroutines.
func (f *fakeServer) client(t *testing.T) *http.Client {
	c := f.Client()
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// redirectTransport sends every request to a fixed server, to test what
// the SDK does for hosts a test cannot serve (api.openai.com).
type redirectTransport struct {
	to   *url.URL
	next http.RoundTripper
}

func (rt redirectTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = rt.to.Scheme, rt.to.Host
	req.Host = rt.to.Host
	return rt.next.RoundTrip(req)
}

// get walks a decoded JSON value along keys (string) and indexes (int).
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %v is not an object", p, v)
			}
			v = m[p]
		case int:
			a, ok := v.([]any)
			if !ok || p >= len(a) {
				t.Fatalf("at [%d]: %v is not an array that long", p, v)
			}
			v = a[p]
		}
	}
	return v
}

// jsonEqual reports whether a decoded value equals the JSON text want.
func jsonEqual(t *testing.T, got any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %s: %v", want, err)
	}
	g, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	return string(g) == string(wb)
}
