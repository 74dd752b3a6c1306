// Package playground serves the local playground: a page, embedded in the
// binary, that runs execution requests against the runner's own API and
// draws their DAG live from the event stream (docs/playground.md).
//
// Only the local server mounts it (functions/runner -dev, make run), never
// the Lambda function. The page is static: it holds no token and no run
// data; it reads the token from its URL's fragment, which never reaches
// the server, and talks to the API with fetch like any other client.
package playground

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/runnerd/lambda-runner/examples"
	"github.com/runnerd/lambda-runner/protocol"
)

// Path is where the page is served.
const Path = "/playground/"

// CodeForbidden is the error code of a request refused for its Host or
// its origin. It is not a Runner protocol code: only the local server,
// never a deployed runner, answers with it.
const CodeForbidden protocol.Code = "FORBIDDEN"

// ContentSecurityPolicy is sent with every file of the page: scripts,
// styles and connections from the server's own origin only, nothing
// inline, no frames, no forms, no plugins.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed page
var files embed.FS

// allowedHosts are the names a browser uses for a loopback server. A page
// on any other name that reaches this server got here by DNS rebinding.
var allowedHosts = []string{"localhost", "127.0.0.1", "::1"}

// URL is the page's address for a server at base (http://127.0.0.1:8080),
// with token in the fragment: a browser keeps the fragment to itself, so
// the token reaches neither the server's logs nor a Referer.
func URL(base, token string) string {
	return strings.TrimSuffix(base, "/") + Path + "#token=" + url.QueryEscape(token)
}

// New returns the local server's handler: the page under Path, everything
// else to api. Every request must name a loopback Host (localhost,
// 127.0.0.1, [::1]) and, when a browser says where it comes from, come
// from the same origin (http.CrossOriginProtection): a refused request
// gets 403 and a JSON error body with code FORBIDDEN.
func New(api http.Handler) http.Handler { return NewNamed(api, nil) }

// NewNamed is New with the API answering the Host names apiHost accepts
// (nil: the loopback's only, as New): a server with real tokens serves its
// API under the names it is reached by (AllowHosts), the page still only
// under the loopback's. The cross-origin check applies to both.
func NewNamed(api http.Handler, apiHost func(host string) bool) http.Handler {
	if apiHost == nil {
		apiHost = loopback
	}
	page := pageHandler()
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Not an http.ServeMux: it would redirect the API's "//v1/…",
		// which the API itself accepts (docs/protocol.md).
		switch {
		case r.URL.Path == strings.TrimSuffix(Path, "/"):
			http.Redirect(w, r, Path, http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, Path):
			page.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forbid(w, "cross-origin request refused")
	}))
	guarded := cop.Handler(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := hostName(r.Host)
		switch {
		case isPage(r.URL.Path) && !loopback(host):
			forbid(w, "this server answers only to localhost, 127.0.0.1 and [::1]")
			return
		case !apiHost(host):
			forbid(w, "this server does not answer to this Host name (RUNNER_ALLOWED_HOSTS lists the names it answers to)")
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// isPage reports whether a request's path is the page's.
func isPage(p string) bool {
	return p == strings.TrimSuffix(Path, "/") || strings.HasPrefix(p, Path)
}

// AllowHosts returns the Host check of a local server's API. patterns are
// RUNNER_ALLOWED_HOSTS as infra/config returns them (lower case): a name or
// IP address matches itself, "*.example.com" every name under
// example.com, "*" every name. dev adds the loopback's names. With no
// pattern, a dev server answers only to the loopback's names and any other
// to every name: a server with real tokens is reached by whatever name its
// clients use (a compose service, a load balancer), and a request without
// one of its tokens is refused anyway.
func AllowHosts(patterns []string, dev bool) func(host string) bool {
	if len(patterns) == 0 {
		if dev {
			return loopback
		}
		return func(string) bool { return true }
	}
	return func(host string) bool {
		if dev && loopback(host) {
			return true
		}
		for _, p := range patterns {
			if p == "*" || p == host {
				return true
			}
			if suffix, ok := strings.CutPrefix(p, "*"); ok && len(host) > len(suffix) && strings.HasSuffix(host, suffix) {
				return true
			}
		}
		return false
	}
}

// hostName is a Host header's name: the port, an IPv6 address's brackets
// and a final dot removed, in lower case.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// loopback reports whether a Host's name (hostName) names the loopback.
func loopback(host string) bool { return slices.Contains(allowedHosts, host) }

func forbid(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	_ = json.NewEncoder(w).Encode(protocol.ErrorResponse{Version: 1, Error: protocol.ErrorBody{Code: CodeForbidden, Message: msg}})
}

// example is one request the page offers to load.
type example struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// pageHandler serves the page's files and examples.json, the examples of
// the repository's examples/ directory.
func pageHandler() http.Handler {
	sub, err := fs.Sub(files, "page")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	list := exampleList()
	static := http.StripPrefix(strings.TrimSuffix(Path, "/"), http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == Path+"examples.json" {
			h.Set("Content-Type", "application/json")
			_, _ = w.Write(list)
			return
		}
		static.ServeHTTP(w, r)
	})
}

// exampleList is examples.json: every example, by file name.
func exampleList() []byte {
	names, err := fs.Glob(examples.FS, "*.json")
	if err != nil {
		panic(err)
	}
	out := make([]example, 0, len(names))
	for _, n := range names {
		b, err := fs.ReadFile(examples.FS, n)
		if err != nil {
			panic(err)
		}
		out = append(out, example{Name: path.Base(n), Text: string(b)})
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	return b
}
