package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/runnerd/lambda-runner/protocol/redact"

	"github.com/runnerd/lambda-runner/engine/sandbox/syntax"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file tests the http node through the real egress client against a
// local server: allowed with allowPrivateNetwork in the policy or with the
// operator's AllowPrefixes, refused by default.

// svcEcho is a local HTTP server. /status/N[/...] answers status N; /redirect
// redirects to the URL in its "to" parameter; anything else echoes the
// request as JSON {method, path, query, headers, body}.
type svcEcho struct {
	*httptest.Server
	hits atomic.Int64
}

func newSvcEcho(t *testing.T) *svcEcho {
	t.Helper()
	s := &svcEcho{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		switch {
		case strings.HasPrefix(r.URL.Path, "/status/"):
			n, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/status/"), "/")
			code, err := strconv.Atoi(n)
			if err != nil || code < 100 {
				code = http.StatusBadRequest
			}
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(code)
			_, _ = fmt.Fprintf(w, "status %d for %s", code, r.URL.RawQuery)
			return
		case r.URL.Path == "/redirect":
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		headers := map[string]string{}
		for k := range r.Header {
			headers[k] = r.Header.Get(k)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", "yes")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "headers": headers, "body": string(body),
		})
	}))
	t.Cleanup(s.Close)
	return s
}

// host is the server's host:port.
func (s *svcEcho) host() string { return strings.TrimPrefix(s.URL, "http://") }

func TestHTTPNode(t *testing.T) {
	allowPrivate := `"policy":{"allowPrivateNetwork":true}`
	tests := []struct {
		name      string
		with      string // {url} is the echo server's base URL
		http      string // runtime.http members
		extra     string
		loopback  bool // the operator admits 127.0.0.1/32
		check     func(t *testing.T, out any)
		wantCode  protocol.Code
		wantMsg   string
		hits      int64
		requests  int64
		decisions []string
	}{
		{
			name: "GET with query and headers",
			with: `{"url":"{url}/items","query":{"q":"a b","n":2},"headers":{"X-Who":"${{ input.who }}"}}`,
			http: allowPrivate,
			check: func(t *testing.T, out any) {
				if svcGet(out, "status") != 200.0 || svcGet(out, "headers", "X-Echo") != "yes" {
					t.Errorf("status, headers = %v, %v", svcGet(out, "status"), svcGet(out, "headers"))
				}
				body := svcGet(out, "body")
				if svcGet(body, "method") != "GET" || svcGet(body, "path") != "/items" ||
					svcGet(body, "query") != "n=2&q=a+b" || svcGet(body, "headers", "X-Who") != "Ann" {
					t.Errorf("server saw %v", body)
				}
			},
			hits: 1, requests: 1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name: "POST JSON body",
			with: `{"method":"post","url":"{url}/items","body":{"name":"${{ input.who }}","n":1}}`,
			http: allowPrivate,
			check: func(t *testing.T, out any) {
				body := svcGet(out, "body")
				if svcGet(body, "method") != "POST" || svcGet(body, "body") != `{"n":1,"name":"Ann"}` ||
					svcGet(body, "headers", "Content-Type") != "application/json" {
					t.Errorf("server saw %v", body)
				}
			},
			hits: 1, requests: 1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name: "text response",
			with: `{"url":"{url}/status/201","responseType":"text"}`,
			http: allowPrivate,
			check: func(t *testing.T, out any) {
				if svcGet(out, "status") != 201.0 || svcGet(out, "body") != "status 201 for " {
					t.Errorf("output = %v", out)
				}
			},
			hits: 1, requests: 1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name:     "status 404 fails the node",
			with:     `{"url":"{url}/status/404?token=abc"}`,
			http:     allowPrivate,
			wantCode: protocol.CodeHTTPError,
			wantMsg:  "status 404 Not Found",
			hits:     1, requests: 1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name:     "a failed status names the URL, not its query",
			with:     `{"url":"{url}/status/404?token=abc"}`,
			http:     allowPrivate,
			wantCode: protocol.CodeHTTPError,
			wantMsg:  "GET {url}/status/404: status 404 Not Found",
			hits:     1, requests: 1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name:     "a secret in the URL's path is redacted, its query left out",
			with:     `{"url":"{url}/status/404/k3y-value?q=k3y-value&token=abc"}`,
			http:     allowPrivate + `,"secrets":{"k":{"value":"k3y-value","hosts":["127.0.0.1"]}}`,
			wantCode: protocol.CodeHTTPError,
			wantMsg:  "GET {url}/status/404/[REDACTED]: status 404 Not Found",
			hits:     1, requests: 1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name: "failOnStatus false returns the response",
			with: `{"url":"{url}/status/503","failOnStatus":false}`,
			http: allowPrivate,
			check: func(t *testing.T, out any) {
				if svcGet(out, "status") != 503.0 {
					t.Errorf("output = %v", out)
				}
			},
			hits: 1, requests: 1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name:      "loopback blocked by default",
			with:      `{"url":"{url}/items"}`,
			wantCode:  protocol.CodeHTTPBlocked,
			wantMsg:   "loopback",
			hits:      0,
			requests:  1, // attempted: refused at dial time
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name:      "loopback admitted by the operator",
			with:      `{"url":"{url}/items"}`,
			loopback:  true,
			check:     func(t *testing.T, out any) {},
			hits:      1,
			requests:  1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name:      "secret bound to another host",
			with:      `{"url":"{url}/items","headers":{"Authorization":"Bearer ${{ secrets.tracker }}"}}`,
			http:      allowPrivate + `,"secrets":{"tracker":{"value":"tr4cker-t0ken","hosts":["api.example.com"]}}`,
			wantCode:  protocol.CodeHTTPBlocked,
			wantMsg:   "bound to api.example.com",
			decisions: []string{"h http.request 127.0.0.1 allow"}, // preflight
		},
		{
			name: "secret bound to its host",
			with: `{"url":"{url}/items","headers":{"Authorization":"Bearer ${{ secrets.tracker }}"}}`,
			http: allowPrivate + `,"secrets":{"tracker":{"value":"tr4cker-t0ken","hosts":["127.0.0.1"]}}`,
			check: func(t *testing.T, out any) {
				// The output holds it redacted: the wire form of outputs.
				if got := svcGet(out, "body", "headers", "Authorization"); got != "Bearer "+redact.Marker {
					t.Errorf("server saw Authorization %v", got)
				}
			},
			hits: 1, requests: 1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name:     "redirect off the bound host",
			with:     `{"url":"{url}/redirect","query":{"to":"http://localhost:{port}/items"},"headers":{"X-Key":"${{ secrets.k }}"}}`,
			http:     allowPrivate + `,"secrets":{"k":{"value":"k3y-value","hosts":["127.0.0.1"]}}`,
			wantCode: protocol.CodeHTTPBlocked,
			wantMsg:  "redirect refused",
			hits:     1, requests: 1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name:      "denied by permissions",
			with:      `{"url":"{url}/items"}`,
			http:      allowPrivate,
			extra:     `"permissions":["http:api.example.com"]`,
			wantCode:  protocol.CodePermissionDenied,
			decisions: []string{"h http.request 127.0.0.1 deny"},
		},
		{
			name: "templated URL decided at run time",
			with: `{"url":"${{ input.base }}/items"}`,
			http: allowPrivate,
			check: func(t *testing.T, out any) {
				if svcGet(out, "body", "path") != "/items" {
					t.Errorf("output = %v", out)
				}
			},
			hits: 1, requests: 1,
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
		{
			name:      "policy method refused at run time",
			with:      `{"method":"${{ 'DELETE' }}","url":"{url}/items"}`,
			http:      `"policy":{"allowPrivateNetwork":true,"methods":["GET"]}`,
			wantCode:  protocol.CodeHTTPBlocked,
			wantMsg:   "not in methods",
			decisions: []string{"h http.request 127.0.0.1 allow"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSvcEcho(t)
			_, port, _ := strings.Cut(srv.host(), ":")
			e, _ := svcEngine(t, func(s *Services) {
				if tt.loopback {
					s.HTTP.AllowPrefixes = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
				}
			})
			with := strings.NewReplacer("{url}", srv.URL, "{port}", port).Replace(tt.with)
			rt := ""
			if tt.http != "" {
				rt = `{"http":{` + tt.http + `}}`
			}
			s := svcRun(t, e, svcReq{
				workflow: `{"nodes":[{"id":"h","type":"http","with":` + with + `}]}`,
				input:    fmt.Sprintf(`{"who":"Ann","base":%q}`, srv.URL),
				runtime:  rt,
				extra:    tt.extra,
			})
			if tt.wantCode != "" {
				s.failure(t)
				f := s.nodeFailed("h")
				want := strings.ReplaceAll(tt.wantMsg, "{url}", srv.URL)
				if f == nil || f.Error.Code != tt.wantCode || !strings.Contains(f.Error.Message, want) {
					t.Errorf("node.failed = %+v, want %s containing %q", f, tt.wantCode, want)
				}
				if f != nil && (strings.Contains(f.Error.Message, "abc") || strings.Contains(f.Error.Message, "k3y-value")) {
					t.Errorf("message %q shows the query or a secret", f.Error.Message)
				}
			} else {
				res := s.result(t)
				tt.check(t, svcGet(outputOf(t, res), "h"))
				if res.Usage.HTTPRequests != tt.requests {
					t.Errorf("usage.httpRequests = %d, want %d", res.Usage.HTTPRequests, tt.requests)
				}
			}
			if got := srv.hits.Load(); got != tt.hits {
				t.Errorf("server got %d requests, want %d", got, tt.hits)
			}
			if got := svcDecisions(s); !slices.Equal(got, tt.decisions) {
				t.Errorf("decisions = %q, want %q", got, tt.decisions)
			}
		})
	}
}

// A secret bound to a host cannot leave it through another node: its echo
// is scrubbed at the door, so a later request carries only the marker.
func TestHTTPNodeBindsLaunderedSecrets(t *testing.T) {
	srv := newSvcEcho(t)
	_, port, _ := strings.Cut(srv.host(), ":")
	e, _ := svcEngine(t, nil)
	s := svcRun(t, e, svcReq{
		workflow: `{"nodes":[
			{"id":"a","type":"http","with":{"url":"` + srv.URL + `/a","headers":{"X-Token":"${{ secrets.k }}"}}},
			{"id":"b","type":"http","needs":["a"],"with":{"url":"http://localhost:` + port + `/b","query":{"t":"${{ nodes.a.output.body.headers['X-Token'] }}"}}}]}`,
		runtime: `{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{"k":{"value":"l4undered-s3cret","hosts":["127.0.0.1"]}}}}`,
	})
	res := s.result(t)
	if got := svcGet(outputOf(t, res), "b", "body", "query"); got != "t="+url.QueryEscape(redact.Marker) {
		t.Errorf("b's server saw query %v, want only the marker", got)
	}
	if got := srv.hits.Load(); got != 2 {
		t.Errorf("server got %d requests, want 2", got)
	}
}

func TestHTTPNodePrepare(t *testing.T) {
	tests := []struct {
		name    string
		nodes   string
		http    string
		path    string
		message []string
	}{
		{"literal host denied", `[{"id":"h","type":"http","with":{"url":"https://evil.example.com/x"}}]`,
			`{"policy":{"denyHosts":["*.example.com"]}}`,
			"workflow.nodes[0].with.url", []string{`node "h"`, "evil.example.com", "denyHosts"}},
		{"literal host not allowed", `[{"id":"h","type":"http","with":{"url":"https://other.org/x"}}]`,
			`{"policy":{"allowHosts":["api.example.com"]}}`,
			"workflow.nodes[0].with.url", []string{"other.org", "allowHosts"}},
		{"literal URL not http", `[{"id":"h","type":"http","with":{"url":"file:///etc/passwd"}}]`, `{}`,
			"workflow.nodes[0].with.url", []string{"absolute http or https URL"}},
		{"literal method refused by policy", `[{"id":"h","type":"http","with":{"method":"DELETE","url":"https://api.example.com/x"}}]`,
			`{"policy":{"methods":["GET"]}}`,
			"workflow.nodes[0].with.method", []string{"DELETE", "methods"}},
		{"invalid policy", `[{"id":"h","type":"http","with":{"url":"https://api.example.com/x"}}]`,
			`{"policy":{"denyHosts":["https://x.com/"],"maxRequests":-1}}`,
			"runtime.http.policy.denyHosts[0]", nil},
		{"invalid policy, second problem", `[{"id":"h","type":"http","with":{"url":"https://api.example.com/x"}}]`,
			`{"policy":{"denyHosts":["https://x.com/"],"maxRequests":-1}}`,
			"runtime.http.policy.maxRequests", nil},
		{"unknown secret", `[{"id":"h","type":"http","with":{"url":"https://api.example.com/x","headers":{"A":"${{ secrets.nope }}"}}}]`,
			`{"secrets":{"k":"v4lue-k"}}`,
			"workflow.nodes[0].with.headers.A", []string{`secret "nope"`}},
		{"secret in a set node", `[{"id":"s","type":"set","with":{"value":"${{ secrets.k }}"}}]`,
			`{"secrets":{"k":"v4lue-k"}}`,
			"workflow.nodes[0].with.value", []string{"secrets are only available in an http node"}},
		{"secret in an http method", `[{"id":"h","type":"http","with":{"method":"${{ secrets.k }}","url":"https://api.example.com/x"}}]`,
			`{"secrets":{"k":"v4lue-k"}}`,
			"workflow.nodes[0].with.method", []string{"secrets are only available"}},
		{"bad secret host pattern", `[{"id":"h","type":"http","with":{"url":"https://api.example.com/x"}}]`,
			`{"secrets":{"k":{"value":"v4lue-k","hosts":["a**"]}}}`,
			"runtime.http.secrets.k.hosts[0]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := svcEngine(t, nil)
			inv := prepareInvalid(t, e, svcReq{workflow: `{"nodes":` + tt.nodes + `}`, runtime: `{"http":` + tt.http + `}`}.String())
			wantProblems(t, inv.Details, []problem{{tt.path, tt.message}}, []string{"v4lue-k"})
		})
	}
}

// The host of a literal URL, or of a templated one whose host is written
// out, is decided in preflight, before any node runs: a denial or a consent
// there costs no request.
func TestHTTPNodePreflight(t *testing.T) {
	srv := newSvcEcho(t)
	e, _ := svcEngine(t, nil)
	s := svcRun(t, e, svcReq{
		workflow: `{"nodes":[{"id":"first","type":"http","with":{"url":"` + srv.URL + `/1"}},
			{"id":"h","type":"http","needs":["first"],"with":{"url":"https://API.example.com:8443/x/${{ input.id }}"}}]}`,
		input:   `{"id":"7"}`,
		runtime: `{"http":{"policy":{"allowPrivateNetwork":true}}}`,
		extra:   `"permissions":["http:127.0.0.1"]`,
	})
	s.failure(t)
	if f := s.nodeFailed("h"); f == nil || f.Error.Code != protocol.CodePermissionDenied {
		t.Errorf("node h failed with %+v, want PERMISSION_DENIED", f)
	}
	want := []string{"first http.request 127.0.0.1 allow", "h http.request api.example.com deny"}
	if got := svcDecisions(s); !slices.Equal(got, want) {
		t.Errorf("decisions = %q, want %q", got, want)
	}
	if i, j := s.index(protocol.TypePermissionDecision, "h"), s.index(protocol.TypeNodeStarted, "first"); i < 0 || i > j {
		t.Errorf("h's decision at event %d, first started at %d: want it decided before any node runs", i, j)
	}
}

// Every example request is valid: examples/README.md promises it.
func TestExamplesPrepare(t *testing.T) {
	files, err := filepath.Glob("../examples/*.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"agent.json", "code.json", "hello.json", "http-secret.json", "http.json", "model.json", "tool.json"}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("examples/%s is missing", w)
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			e, _ := svcEngine(t, nil)
			// Code nodes need a sandbox; checked in process, they start
			// no worker.
			e.Services.Code = syntax.Checker{}
			prepareReq(t, e, string(b))
		})
	}
}
