package playground_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/functions/playground"
)

// api stands for the runner's API: it says it was reached.
var api = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Api", "1")
	_, _ = io.WriteString(w, "api "+r.URL.Path)
})

func serve(t *testing.T, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	playground.New(api).ServeHTTP(w, r)
	return w
}

func TestNewRoutesAndGuards(t *testing.T) {
	tests := []struct {
		name, method, target, host string
		header                     map[string]string
		status                     int
		api                        bool
	}{
		{"page", "GET", "/playground/", "127.0.0.1:8080", nil, 200, false},
		{"page script", "GET", "/playground/app.js", "localhost:8080", nil, 200, false},
		{"page, ipv6 loopback", "HEAD", "/playground/style.css", "[::1]:8080", nil, 200, false},
		{"page, no port", "GET", "/playground/", "LOCALHOST", nil, 200, false},
		{"page without slash", "GET", "/playground", "127.0.0.1", nil, http.StatusMovedPermanently, false},
		{"unknown page file", "GET", "/playground/nope.js", "127.0.0.1", nil, 404, false},
		{"page refuses POST", "POST", "/playground/", "127.0.0.1", nil, http.StatusMethodNotAllowed, false},
		{"api", "GET", "/v1/capabilities", "127.0.0.1:8080", nil, 200, true},
		{"api, doubled slash kept", "POST", "//v1/executions", "127.0.0.1:8080", nil, 200, true},
		{"rebound name", "GET", "/playground/", "evil.example:8080", nil, 403, false},
		{"rebound name to the api", "GET", "/v1/capabilities", "evil.example", nil, 403, false},
		{"loopback-looking name", "GET", "/", "127.0.0.1.evil.example", nil, 403, false},
		{"localhost subdomain", "GET", "/", "a.localhost", nil, 403, false},
		{"other loopback address", "GET", "/", "127.0.0.2:8080", nil, 403, false},
		{"empty host", "GET", "/", "", nil, 403, false},
		{"cross-site POST", "POST", "/v1/executions", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, false},
		{"same-site POST from another port", "POST", "/v1/executions", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, false},
		{"foreign Origin without fetch metadata", "POST", "/v1/executions", "127.0.0.1:8080", map[string]string{"Origin": "http://evil.example"}, 403, false},
		{"same-origin POST", "POST", "/v1/executions", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8080"}, 200, true},
		{"no fetch metadata (curl)", "POST", "/v1/executions", "127.0.0.1:8080", nil, 200, true},
		{"cross-site GET is safe", "GET", "/v1/capabilities", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "cross-site"}, 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "http://x"+tt.target, nil)
			r.Host = tt.host
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			w := serve(t, r)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if got := w.Header().Get("X-Api") == "1"; got != tt.api {
				t.Errorf("reached the api: %v, want %v", got, tt.api)
			}
			if tt.status == 403 {
				var body struct {
					Version int
					Error   struct{ Code, Message string }
				}
				if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error.Code != "FORBIDDEN" || body.Version != 1 {
					t.Errorf("refusal body %q, want a JSON error with code FORBIDDEN", w.Body)
				}
			}
		})
	}
}

func TestPageHeaders(t *testing.T) {
	for _, f := range []string{"", "app.js", "graph.js", "layout.js", "stream.js", "jsonpath.js", "style.css", "examples.json"} {
		r := httptest.NewRequest("GET", "http://127.0.0.1/playground/"+f, nil)
		r.Host = "127.0.0.1"
		w := serve(t, r)
		if w.Code != 200 {
			t.Errorf("%s: status %d", f, w.Code)
			continue
		}
		h := w.Header()
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %s", f, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: Content-Security-Policy %q allows something unsafe", f, csp)
		}
		if h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", f, h)
		}
	}
}

// TestPageHasNothingInline holds the page to its CSP: no inline script,
// no style attribute or element, no handler attribute, nothing from
// another origin.
func TestPageHasNothingInline(t *testing.T) {
	r := httptest.NewRequest("GET", "http://127.0.0.1/playground/", nil)
	r.Host = "127.0.0.1"
	html := serve(t, r).Body.String()
	for _, bad := range []string{"<style", "style=", " onclick=", " onload=", `src="http`, `href="http`, `src="//`, `href="//`, "javascript:"} {
		if strings.Contains(html, bad) {
			t.Errorf("index.html contains %q", bad)
		}
	}
	if strings.Count(html, "<script") != 1 || !strings.Contains(html, `<script type="module" src="app.js"></script>`) {
		t.Error("index.html must load app.js as its only script, from a file")
	}
	for _, f := range []string{"app.js", "graph.js", "history.js", "session.js"} {
		r := httptest.NewRequest("GET", "http://127.0.0.1/playground/"+f, nil)
		r.Host = "127.0.0.1"
		js := serve(t, r).Body.String()
		// Run values are written as text: no HTML parsing sinks at all.
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(js, sink) {
				t.Errorf("%s uses %s", f, sink)
			}
		}
	}
}

func TestExamplesAreServed(t *testing.T) {
	r := httptest.NewRequest("GET", "http://127.0.0.1/playground/examples.json", nil)
	r.Host = "127.0.0.1"
	var list []struct{ Name, Text string }
	if err := json.Unmarshal(serve(t, r).Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, x := range list {
		names[x.Name] = json.Valid([]byte(x.Text))
	}
	for _, want := range []string{"hello.json", "fanout.json", "tool.json"} {
		if !names[want] {
			t.Errorf("examples.json lacks %s (or it is not JSON): %v", want, names)
		}
	}
}

func TestURLKeepsTheTokenInTheFragment(t *testing.T) {
	got := playground.URL("http://127.0.0.1:8080", "dev_a+b/c")
	if want := "http://127.0.0.1:8080/playground/#token=dev_a%2Bb%2Fc"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
}
