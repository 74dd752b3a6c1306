package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

func TestDialGuard(t *testing.T) {
	srv := newServer(t, ok)
	tests := []struct {
		name    string
		policy  protocol.HTTPPolicy
		opts    Options
		url     string
		blocked string // fragment of the HTTP_BLOCKED message; "" when the request must succeed
	}{
		{"loopback refused by default", protocol.HTTPPolicy{}, Options{}, srv.URL + "/", "loopback address (allowPrivateNetwork is off)"},
		{"name resolving to loopback refused", protocol.HTTPPolicy{}, Options{}, "http://localhost:" + srv.port() + "/", "loopback address"},
		{"mapped literal refused", protocol.HTTPPolicy{}, Options{}, "http://[::ffff:127.0.0.1]:" + srv.port() + "/", "loopback address"},
		{"allowPrivateNetwork", protocol.HTTPPolicy{AllowPrivateNetwork: true}, Options{}, srv.URL + "/", ""},
		{"operator prefix", protocol.HTTPPolicy{}, loopbackOpts, srv.URL + "/", ""},
		{"operator prefix, other loopback address", protocol.HTTPPolicy{}, Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}, srv.URL + "/", "loopback address"},
		{"blocked despite allowPrivateNetwork", protocol.HTTPPolicy{AllowPrivateNetwork: true}, Options{Blocked: []netip.AddrPort{srv.addrPort()}}, srv.URL + "/", "blocked by the runner"},
		{"blocked despite prefix", protocol.HTTPPolicy{}, Options{AllowPrefixes: allow127, Blocked: []netip.AddrPort{srv.addrPort()}}, srv.URL + "/", "blocked by the runner"},
		{"blocked through a name", protocol.HTTPPolicy{AllowPrivateNetwork: true}, Options{Blocked: []netip.AddrPort{srv.addrPort()}}, "http://localhost:" + srv.port() + "/", "blocked by the runner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.hits.Load()
			c := newClient(t, tt.policy, tt.opts)
			resp, err := c.Do(t.Context(), &Request{URL: tt.url})
			hits := srv.hits.Load() - before
			if tt.blocked != "" {
				wantError(t, err, protocol.CodeHTTPBlocked, tt.blocked)
				if hits != 0 {
					t.Errorf("server saw %d requests, want 0", hits)
				}
				return
			}
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if resp.Status != 200 || resp.Body != "ok" || hits != 1 {
				t.Errorf("got status %d body %v, server hits %d; want 200 \"ok\" 1", resp.Status, resp.Body, hits)
			}
		})
	}
}

// redirectTo answers every request with a redirect to target.
func redirectTo(target string, code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target, code) }
}

func TestRedirectToRefusedAddress(t *testing.T) {
	inner, err := listenServer(t, "127.0.0.2:0", ok)
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	outer := newServer(t, redirectTo(inner.URL+"/inner", http.StatusFound))
	tests := []struct {
		name    string
		opts    Options
		blocked bool
	}{
		{"second address not admitted", loopbackOpts, true},
		{"both admitted", Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/29")}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in0, out0 := inner.hits.Load(), outer.hits.Load()
			c := newClient(t, protocol.HTTPPolicy{}, tt.opts)
			resp, err := c.Do(t.Context(), &Request{URL: outer.URL + "/start"})
			if tt.blocked {
				wantError(t, err, protocol.CodeHTTPBlocked, "http://"+inner.Listener.Addr().String()+"/inner refused", "loopback address")
			} else if err != nil || resp.Status != 200 {
				t.Fatalf("Do = %v, %v; want 200", resp, err)
			}
			wantInner := int32(1)
			if tt.blocked {
				wantInner = 0
			}
			if got := inner.hits.Load() - in0; got != wantInner {
				t.Errorf("inner server saw %d requests, want %d", got, wantInner)
			}
			if got := outer.hits.Load() - out0; got != 1 {
				t.Errorf("outer server saw %d requests, want 1", got)
			}
		})
	}
}

// countdown serves /to/N by redirecting to /to/N-1 until /to/0, which
// answers 200.
func countdown(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/to/"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if n == 0 {
		w.Write([]byte("arrived"))
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/to/%d", n-1), http.StatusFound)
}

func TestRedirectLimit(t *testing.T) {
	srv := newServer(t, countdown)
	tests := []struct {
		name     string
		policy   *int
		opts     int // Options.MaxRedirects
		start    int
		status   int    // want status, when the request succeeds
		err      string // fragment of the HTTP_ERROR message otherwise
		wantHits int32
	}{
		{"within policy limit", intPtr(2), 0, 2, 200, "", 3},
		{"over policy limit", intPtr(2), 0, 3, 0, "stopped after 2 redirects, maxRedirects (2)", 3},
		{"runner default", nil, 0, 5, 200, "", 6},
		{"over runner default", nil, 0, 6, 0, "stopped after 5 redirects, the runner's maxRedirects limit (5)", 6},
		{"policy clipped to runner", intPtr(10), 3, 4, 0, "the runner's maxRedirects limit (3)", 4},
		{"zero returns the redirect", intPtr(0), 0, 3, http.StatusFound, "", 1},
		{"runner negative follows none", nil, -1, 3, http.StatusFound, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.hits.Load()
			c := newClient(t, protocol.HTTPPolicy{MaxRedirects: tt.policy}, Options{AllowPrefixes: allow127, MaxRedirects: tt.opts})
			resp, err := c.Do(t.Context(), &Request{URL: fmt.Sprintf("%s/to/%d", srv.URL, tt.start)})
			if tt.err != "" {
				wantError(t, err, protocol.CodeHTTPError, tt.err)
			} else if err != nil {
				t.Fatalf("Do: %v", err)
			} else if resp.Status != tt.status {
				t.Errorf("status = %d, want %d", resp.Status, tt.status)
			} else if tt.status == http.StatusFound && resp.Headers["Location"] != fmt.Sprintf("/to/%d", tt.start-1) {
				t.Errorf("Location = %q", resp.Headers["Location"])
			}
			if got := srv.hits.Load() - before; got != tt.wantHits {
				t.Errorf("server saw %d requests, want %d", got, tt.wantHits)
			}
			if got := c.Requests(); got != int(tt.wantHits) {
				t.Errorf("Requests() = %d, want %d", got, tt.wantHits)
			}
		})
	}
}

func TestMaxRequests(t *testing.T) {
	srv := newServer(t, countdown)
	t.Run("sequential", func(t *testing.T) {
		before := srv.hits.Load()
		c := newClient(t, protocol.HTTPPolicy{MaxRequests: 2}, loopbackOpts)
		for i := range 3 {
			_, err := c.Do(t.Context(), &Request{URL: srv.URL + "/to/0"})
			if i < 2 && err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if i == 2 {
				wantError(t, err, protocol.CodeHTTPBlocked, "maxRequests (2) reached")
			}
		}
		if got := srv.hits.Load() - before; got != 2 {
			t.Errorf("server saw %d requests, want 2", got)
		}
	})
	t.Run("redirects count", func(t *testing.T) {
		before := srv.hits.Load()
		c := newClient(t, protocol.HTTPPolicy{MaxRequests: 2}, loopbackOpts)
		_, err := c.Do(t.Context(), &Request{URL: srv.URL + "/to/2"})
		wantError(t, err, protocol.CodeHTTPBlocked, "redirect refused: maxRequests (2) reached")
		if got := srv.hits.Load() - before; got != 2 {
			t.Errorf("server saw %d requests, want 2", got)
		}
	})
	t.Run("runner ceiling", func(t *testing.T) {
		c := newClient(t, protocol.HTTPPolicy{MaxRequests: 50}, Options{AllowPrefixes: allow127, MaxRequests: 1})
		if _, err := c.Do(t.Context(), &Request{URL: srv.URL + "/to/0"}); err != nil {
			t.Fatal(err)
		}
		_, err := c.Do(t.Context(), &Request{URL: srv.URL + "/to/0"})
		wantError(t, err, protocol.CodeHTTPBlocked, "the runner's maxRequests limit (1) reached")
	})
	t.Run("concurrent", func(t *testing.T) {
		before := srv.hits.Load()
		c := newClient(t, protocol.HTTPPolicy{MaxRequests: 5}, loopbackOpts)
		var wg sync.WaitGroup
		var mu sync.Mutex
		okCount, blockedCount := 0, 0
		for range 12 {
			wg.Go(func() {
				_, err := c.Do(t.Context(), &Request{URL: srv.URL + "/to/0"})
				mu.Lock()
				defer mu.Unlock()
				var e *Error
				switch {
				case err == nil:
					okCount++
				case errors.As(err, &e) && e.Code == protocol.CodeHTTPBlocked:
					blockedCount++
				default:
					t.Errorf("Do: %v", err)
				}
			})
		}
		wg.Wait()
		if okCount != 5 || blockedCount != 7 || c.Requests() != 5 || srv.hits.Load()-before != 5 {
			t.Errorf("ok %d, blocked %d, Requests() %d, hits %d; want 5, 7, 5, 5", okCount, blockedCount, c.Requests(), srv.hits.Load()-before)
		}
	})
}

func TestResponseSizeCap(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		body := strings.Repeat("x", n)
		if r.URL.Path == "/chunked" {
			// Flushing first forces chunked encoding: no Content-Length
			// to check, the limit must hold while reading.
			w.(http.Flusher).Flush()
			for i := 0; i < n; i += 10 {
				io.WriteString(w, body[i:min(i+10, n)])
			}
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		io.WriteString(w, body)
	})
	tests := []struct {
		name   string
		policy int64
		opts   int64
		path   string
		n      int
		err    string
	}{
		{"at policy limit", 100, 0, "/fixed", 100, ""},
		{"over policy limit", 100, 0, "/fixed", 101, "response body from 127.0.0.1 exceeds maxResponseBytes (100)"},
		{"over policy limit chunked", 100, 0, "/chunked", 150, "exceeds maxResponseBytes (100)"},
		{"at limit chunked", 100, 0, "/chunked", 100, ""},
		{"runner ceiling wins", 100, 50, "/fixed", 60, "exceeds the runner's maxResponseBytes limit (50)"},
		{"runner ceiling chunked", 0, 50, "/chunked", 60, "exceeds the runner's maxResponseBytes limit (50)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, protocol.HTTPPolicy{MaxResponseBytes: tt.policy}, Options{AllowPrefixes: allow127, MaxResponseBytes: tt.opts})
			resp, err := c.Do(t.Context(), &Request{URL: fmt.Sprintf("%s%s?n=%d", srv.URL, tt.path, tt.n), ResponseType: ResponseText})
			if tt.err != "" {
				wantError(t, err, protocol.CodeHTTPError, tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := resp.Body.(string); len(s) != tt.n {
				t.Errorf("body length %d, want %d", len(s), tt.n)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release) // runs before the server's cleanup Close
	tests := []struct {
		name    string
		policy  int
		opts    time.Duration
		request time.Duration
		ctx     func(context.Context) (context.Context, context.CancelFunc)
		want    string // HTTP_ERROR fragment, or "" for a ctx error
		ctxErr  error
	}{
		{name: "node timeout", request: 100 * time.Millisecond, want: "GET " + srv.URL + "/slow timed out after 100ms"},
		{name: "policy timeout", policy: 80, want: "timed out after 80ms"},
		{name: "node cannot exceed policy", policy: 80, request: time.Minute, want: "timed out after 80ms"},
		{name: "runner timeout", opts: 60 * time.Millisecond, request: time.Minute, want: "timed out after 60ms"},
		{name: "caller deadline", ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 70*time.Millisecond)
		}, ctxErr: context.DeadlineExceeded},
		{name: "caller cancel", ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, ctxErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			if tt.ctx != nil {
				var cancel context.CancelFunc
				ctx, cancel = tt.ctx(ctx)
				defer cancel()
			}
			opts := Options{AllowPrefixes: allow127, Timeout: tt.opts}
			if opts.Timeout == 0 {
				opts.Timeout = 3 * time.Second // so that a broken clip fails fast
			}
			c := newClient(t, protocol.HTTPPolicy{TimeoutMs: tt.policy}, opts)
			start := time.Now()
			_, err := c.Do(ctx, &Request{URL: srv.URL + "/slow?token=hidden", Timeout: tt.request})
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("Do took %v", elapsed)
			}
			if tt.ctxErr != nil {
				var e *Error
				if !errors.Is(err, tt.ctxErr) || errors.As(err, &e) {
					t.Fatalf("error = %v, want one wrapping %v", err, tt.ctxErr)
				}
			} else {
				wantError(t, err, protocol.CodeHTTPError, tt.want)
			}
			if strings.Contains(err.Error(), "hidden") {
				t.Errorf("message %q shows the query", err)
			}
		})
	}
}

func TestBoundSecrets(t *testing.T) {
	const secret = "s3cr3t-Value-42"
	var gotKey, gotReferer sync.Map // path -> header value seen
	record := func(w http.ResponseWriter, r *http.Request) {
		gotKey.Store(r.URL.Path, r.Header.Get("X-Api-Key"))
		gotReferer.Store(r.URL.Path, r.Header.Get("Referer"))
		w.Write([]byte("ok"))
	}
	other := newServer(t, record)
	otherURL := "http://localhost:" + other.port() + "/other"
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, otherURL, http.StatusFound)
			return
		}
		record(w, r)
	})
	bound := protocol.Secret{Value: secret, Hosts: []string{"127.0.0.1"}}
	tests := []struct {
		name     string
		url      string
		bound    []protocol.Secret
		blocked  string // HTTP_BLOCKED fragment, "" for success
		hits     int32  // requests the other server must see
		otherKey string
	}{
		{name: "bound host gets it", url: srv.URL + "/direct", bound: []protocol.Secret{bound}},
		{name: "glob-bound host gets it", url: srv.URL + "/direct", bound: []protocol.Secret{{Value: secret, Hosts: []string{"*.example.com", "127.0.0.*"}}}},
		{name: "first hop elsewhere refused", url: otherURL, bound: []protocol.Secret{bound}, blocked: "request to host localhost carries a secret bound to 127.0.0.1"},
		{name: "redirect elsewhere refused", url: srv.URL + "/away?key=" + secret, bound: []protocol.Secret{bound}, blocked: "redirect refused: request to host localhost carries a secret bound to 127.0.0.1"},
		{name: "unbound secret follows redirect", url: srv.URL + "/away?key=" + secret, hits: 1, otherKey: secret},
		{name: "secret without hosts is not bound", url: srv.URL + "/away", bound: []protocol.Secret{{Value: secret}}, hits: 1, otherKey: secret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotKey.Clear()
			gotReferer.Clear()
			before := other.hits.Load()
			c := newClient(t, protocol.HTTPPolicy{AllowPrivateNetwork: true}, Options{})
			resp, err := c.Do(t.Context(), &Request{URL: tt.url, Headers: map[string]string{"X-Api-Key": secret}, Bound: tt.bound})
			if got := other.hits.Load() - before; got != tt.hits {
				t.Errorf("other host saw %d requests, want %d", got, tt.hits)
			}
			if tt.blocked != "" {
				wantError(t, err, protocol.CodeHTTPBlocked, tt.blocked)
				if strings.Contains(err.Error(), secret) {
					t.Errorf("message %q reveals the secret", err)
				}
				return
			}
			if err != nil || resp.Status != 200 {
				t.Fatalf("Do = %v, %v", resp, err)
			}
			if tt.hits == 0 {
				if v, _ := gotKey.Load("/direct"); v != secret {
					t.Errorf("bound host got X-Api-Key %q, want the secret", v)
				}
				return
			}
			// Without binding, Go forwards custom headers across hosts:
			// this is what Bound exists to stop.
			if v, _ := gotKey.Load("/other"); v != tt.otherKey {
				t.Errorf("other host got X-Api-Key %q, want %q", v, tt.otherKey)
			}
			if v, _ := gotReferer.Load("/other"); v != "" {
				t.Errorf("other host got Referer %q, want none (it would carry the query)", v)
			}
		})
	}
}

func TestAuthorizePerHop(t *testing.T) {
	final := newServer(t, ok)
	srv := newServer(t, redirectTo("http://LOCALHOST:"+final.port()+"/end", http.StatusTemporaryRedirect))
	errDenied := errors.New("permission denied by the engine")
	tests := []struct {
		name      string
		denyHost  string // Authorize refuses this host
		wantHosts []string
		wantErr   error
		finalHits int32
		requests  int // Requests() afterwards: hops that passed Authorize
	}{
		{"every hop", "", []string{"127.0.0.1", "localhost"}, nil, 1, 2},
		{"first hop denied", "127.0.0.1", []string{"127.0.0.1"}, errDenied, 0, 0},
		{"redirect denied", "localhost", []string{"127.0.0.1", "localhost"}, errDenied, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, srvBefore := final.hits.Load(), srv.hits.Load()
			var hosts []string
			c := newClient(t, protocol.HTTPPolicy{AllowPrivateNetwork: true}, Options{})
			_, err := c.Do(t.Context(), &Request{
				Method: "POST", URL: srv.URL + "/start", Body: "payload",
				Authorize: func(_ context.Context, host string) error {
					hosts = append(hosts, host)
					if host == tt.denyHost {
						return errDenied
					}
					return nil
				},
			})
			if err != tt.wantErr {
				t.Errorf("error = %v, want exactly %v", err, tt.wantErr)
			}
			if !slices.Equal(hosts, tt.wantHosts) {
				t.Errorf("Authorize hosts = %q, want %q", hosts, tt.wantHosts)
			}
			if got := final.hits.Load() - before; got != tt.finalHits {
				t.Errorf("final server saw %d requests, want %d", got, tt.finalHits)
			}
			wantSrv := int32(1)
			if tt.denyHost == "127.0.0.1" {
				wantSrv = 0
			}
			if got := srv.hits.Load() - srvBefore; got != wantSrv {
				t.Errorf("first server saw %d requests, want %d", got, wantSrv)
			}
			if got := c.Requests(); got != tt.requests {
				t.Errorf("Requests() = %d, want %d", got, tt.requests)
			}
		})
	}
}

func TestResponseTyping(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		ct, body := r.URL.Query().Get("ct"), r.URL.Query().Get("body")
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.Header().Add("X-Multi", "a")
		w.Header().Add("x-multi", "b")
		if r.URL.Path == "/missing" {
			w.WriteHeader(http.StatusNotFound)
		}
		io.WriteString(w, body)
	})
	tests := []struct {
		name, ct, body, rt string
		want               any
		err                string
	}{
		{"auto json", "application/json", `{"a":1,"b":[true,null]}`, "", map[string]any{"a": 1.0, "b": []any{true, nil}}, ""},
		{"auto json charset", "application/json; charset=utf-8", `[1,2]`, ResponseAuto, []any{1.0, 2.0}, ""},
		{"auto problem+json", "application/problem+json", `{"title":"x"}`, "", map[string]any{"title": "x"}, ""},
		{"auto invalid json is text", "application/json", `{oops`, "", "{oops", ""},
		{"auto text stays text", "text/plain", `[1,2]`, "", "[1,2]", ""},
		{"auto empty json", "application/json", ``, "", "", ""},
		{"json forced", "text/plain", `[1,2]`, ResponseJSON, []any{1.0, 2.0}, ""},
		{"json empty is null", "application/json", ``, ResponseJSON, nil, ""},
		{"json invalid", "application/json", `{"a":`, ResponseJSON, nil, "response from 127.0.0.1 is not valid JSON"},
		{"json trailing garbage", "application/json", `{} x`, ResponseJSON, nil, "not valid JSON"},
		{"text keeps json", "application/json", `{"a":1}`, ResponseText, `{"a":1}`, ""},
		{"bad response type", "", ``, "xml", nil, "responseType must be auto, json or text"},
	}
	c := newClient(t, protocol.HTTPPolicy{}, loopbackOpts)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.Do(t.Context(), &Request{URL: srv.URL + "/", Query: map[string]any{"ct": tt.ct, "body": tt.body}, ResponseType: tt.rt})
			if tt.err != "" {
				wantError(t, err, protocol.CodeHTTPError, tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.Body, tt.want) {
				t.Errorf("body = %#v, want %#v", resp.Body, tt.want)
			}
			if resp.Headers["X-Multi"] != "a, b" {
				t.Errorf("X-Multi = %q, want \"a, b\"", resp.Headers["X-Multi"])
			}
		})
	}
	t.Run("non-2xx is a response", func(t *testing.T) {
		resp, err := c.Do(t.Context(), &Request{URL: srv.URL + "/missing?body=gone"})
		if err != nil || resp.Status != 404 || resp.Body != "gone" {
			t.Errorf("Do = %+v, %v; want 404 \"gone\"", resp, err)
		}
	})
}

// echo describes the request it received as JSON.
func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"method":%q,"query":%q,"contentType":%q,"body":%q,"length":%d,"path":%q}`,
		r.Method, r.URL.RawQuery, r.Header.Get("Content-Type"), b, r.ContentLength, r.URL.Path)
}

func TestRequestEncoding(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/307" {
			http.Redirect(w, r, "/echo", http.StatusTemporaryRedirect)
			return
		}
		if r.URL.Path == "/303" {
			http.Redirect(w, r, "/echo", http.StatusSeeOther)
			return
		}
		echo(w, r)
	})
	tests := []struct {
		name string
		req  Request
		want map[string]any
	}{
		{"query", Request{URL: srv.URL + "/echo?z=1&sig=a%2Fb", Query: map[string]any{"a": "x y", "n": 1.5, "i": 3.0, "b": true, "arr": []any{"p", 2.0}, "skip": nil}},
			map[string]any{"method": "GET", "query": "z=1&sig=a%2Fb&a=x+y&arr=p&arr=2&b=true&i=3&n=1.5", "length": 0.0}},
		{"text body", Request{Method: "post", URL: srv.URL + "/echo", Body: "héllo <b>"},
			map[string]any{"method": "POST", "contentType": "text/plain; charset=utf-8", "body": "héllo <b>", "length": float64(len("héllo <b>"))}},
		{"text body with content type", Request{Method: "PUT", URL: srv.URL + "/echo", Body: "a,b", Headers: map[string]string{"content-type": "text/csv"}},
			map[string]any{"method": "PUT", "contentType": "text/csv", "body": "a,b"}},
		{"json body", Request{Method: "POST", URL: srv.URL + "/echo", Body: map[string]any{"a": "<b>&", "n": 1, "l": []any{true}}},
			map[string]any{"contentType": "application/json", "body": `{"a":"<b>&","l":[true],"n":1}`}},
		{"json scalar body", Request{Method: "POST", URL: srv.URL + "/echo", Body: 42.0},
			map[string]any{"contentType": "application/json", "body": `42`}},
		{"no body", Request{Method: "POST", URL: srv.URL + "/echo"},
			map[string]any{"contentType": "", "body": "", "length": 0.0}},
		{"307 resends the body", Request{Method: "POST", URL: srv.URL + "/307", Body: map[string]any{"k": "v"}},
			map[string]any{"method": "POST", "path": "/echo", "contentType": "application/json", "body": `{"k":"v"}`}},
		{"303 drops the body", Request{Method: "POST", URL: srv.URL + "/303", Body: "gone"},
			map[string]any{"method": "GET", "path": "/echo", "contentType": "", "body": ""}},
	}
	c := newClient(t, protocol.HTTPPolicy{}, loopbackOpts)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.Do(t.Context(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got, okMap := resp.Body.(map[string]any)
			if !okMap {
				t.Fatalf("body = %#v, want the echo object", resp.Body)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %#v, want %#v", k, got[k], v)
				}
			}
		})
	}
}

func TestRequestRefusals(t *testing.T) {
	const secret = "SECRET-xyz"
	tests := []struct {
		name string
		req  Request
		code protocol.Code
		want string
	}{
		{"host header", Request{URL: "http://api.example.com/", Headers: map[string]string{"Host": "internal.example.com"}}, protocol.CodeHTTPBlocked, "Host header cannot be set"},
		{"header injection", Request{URL: "http://api.example.com/", Headers: map[string]string{"X-Key": secret + "\r\nX-Evil: 1"}}, protocol.CodeHTTPError, "header X-Key: value contains control characters"},
		{"bad header name", Request{URL: "http://api.example.com/", Headers: map[string]string{"X Key": secret}}, protocol.CodeHTTPError, `header name "X Key" is not valid`},
		{"bad method", Request{Method: "GE T", URL: "http://api.example.com/"}, protocol.CodeHTTPError, "invalid HTTP method"},
		{"connect", Request{Method: "connect", URL: "http://api.example.com/"}, protocol.CodeHTTPBlocked, "CONNECT is not supported"},
		{"unencodable body", Request{Method: "POST", URL: "http://api.example.com/", Body: map[string]any{"f": func() {}}}, protocol.CodeHTTPError, "cannot be encoded as JSON"},
		{"query object", Request{URL: "http://api.example.com/", Query: map[string]any{"q": map[string]any{"k": secret}}}, protocol.CodeHTTPError, `query parameter "q"`},
	}
	c := newClient(t, protocol.HTTPPolicy{}, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Authorize = failAuthorize(t)
			_, err := c.Do(t.Context(), &tt.req)
			wantError(t, err, tt.code, tt.want)
			if strings.Contains(err.Error(), secret) {
				t.Errorf("message %q leaks a value", err)
			}
		})
	}
}

// TestErrorsHideSecrets makes requests carrying a secret in the query, a
// header and the body fail in each way they can, and checks that no
// message repeats it.
func TestErrorsHideSecrets(t *testing.T) {
	const secret = "SECRET-0xDEADBEEF"
	// A server that answers with garbage quoting the request's header, as
	// a broken or hostile server might.
	garbage := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		buf.WriteString("NOT-HTTP " + r.Header.Get("X-Key") + "\r\n\r\n")
		buf.Flush()
	})
	big := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"echo":"`+r.Header.Get("X-Key")+`"`)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + ln.Addr().String() + "/closed"
	ln.Close() // nothing listens there any more: connection refused

	tests := []struct {
		name   string
		policy protocol.HTTPPolicy
		opts   Options
		url    string
		rt     string
		code   protocol.Code
		want   string
	}{
		{"connection refused", protocol.HTTPPolicy{}, loopbackOpts, closedURL, "", protocol.CodeHTTPError, "/closed failed: connect: connection refused"},
		{"garbage response", protocol.HTTPPolicy{}, loopbackOpts, garbage.URL + "/g", "", protocol.CodeHTTPError, "/g failed"},
		{"guard", protocol.HTTPPolicy{}, Options{}, big.URL + "/b", "", protocol.CodeHTTPBlocked, "/b refused"},
		{"allowHosts", protocol.HTTPPolicy{AllowHosts: []string{"api.example.com"}}, loopbackOpts, big.URL + "/b", "", protocol.CodeHTTPBlocked, "not in allowHosts"},
		{"size", protocol.HTTPPolicy{MaxResponseBytes: 5}, loopbackOpts, big.URL + "/b", "", protocol.CodeHTTPError, "exceeds maxResponseBytes (5)"},
		{"bad json", protocol.HTTPPolicy{}, loopbackOpts, big.URL + "/b", ResponseJSON, protocol.CodeHTTPError, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.policy, tt.opts)
			_, err := c.Do(t.Context(), &Request{
				Method: "POST", URL: tt.url + "?token=" + secret, ResponseType: tt.rt,
				Query:   map[string]any{"also": secret},
				Headers: map[string]string{"X-Key": secret, "Authorization": "Bearer " + secret},
				Body:    map[string]any{"password": secret},
			})
			wantError(t, err, tt.code, tt.want)
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "token=") {
				t.Errorf("message %q leaks the secret or the query", err)
			}
		})
	}
}

// TestTransportIgnoresProxyEnvironment: a proxy would be the only address
// the guard ever sees. Go never proxies loopback, so this cannot be shown
// with a loopback request; the transport is checked directly.
func TestTransportIgnoresProxyEnvironment(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:9")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
	c := newClient(t, protocol.HTTPPolicy{}, Options{})
	if c.transport.Proxy != nil {
		t.Error("transport uses a proxy")
	}
}
