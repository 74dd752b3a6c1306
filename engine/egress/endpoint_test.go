package egress

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// Operator-configured endpoints may reach loopback, but never the address
// registered as the runtime API, link-local or metadata addresses (mapped
// forms included), neither directly nor through a redirect.
func TestEndpoints(t *testing.T) {
	var hits atomic.Int32
	runtimeAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer runtimeAPI.Close()
	mcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
		}
	}))
	defer mcp.Close()
	rt := netip.MustParseAddrPort(strings.TrimPrefix(runtimeAPI.URL, "http://"))
	e := NewEndpoints(Options{Blocked: []netip.AddrPort{rt}}, nil)
	port := strings.TrimPrefix(runtimeAPI.URL, "http://127.0.0.1")

	tests := []struct {
		name, url, want string // want "" means allowed
	}{
		{"loopback MCP server", mcp.URL + "/mcp", ""},
		{"runtime API", runtimeAPI.URL + "/mcp", "blocked by the runner"},
		{"runtime API, IPv4-mapped", "http://[::ffff:127.0.0.1]" + port + "/", "blocked by the runner"},
		{"runtime API, by name", "http://localhost" + port + "/", "blocked by the runner"},
		{"runtime API, unspecified", "http://0.0.0.0" + port + "/", "blocked by the runner"},
		{"metadata", "http://169.254.169.254/latest", "metadata"},
		{"metadata, IPv4-mapped", "http://[::ffff:a9fe:a9fe]/latest", "metadata"},
		{"metadata v6", "http://[fd00:ec2::254]/", "metadata"},
		{"link-local", "http://169.254.3.4/", "link-local"},
		{"link-local v6", "http://[fe80::1]/", "link-local"},
		{"redirect to the runtime API", mcp.URL + "/?to=" + runtimeAPI.URL, "blocked by the runner"},
		{"redirect to the runtime API by name", mcp.URL + "/?to=http://localhost" + port + "/", "blocked by the runner"},
		{"redirect to metadata", mcp.URL + "/?to=http://169.254.169.254/", "metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := e.Check(context.Background(), tt.url)
			resp, err := e.Client().Get(tt.url)
			if err == nil {
				resp.Body.Close()
			}
			if tt.want == "" {
				if check != nil || err != nil {
					t.Fatalf("Check = %v, Get = %v; want both allowed", check, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Get error = %v, want %q", err, tt.want)
			}
			redirect := strings.Contains(tt.url, "?to=")
			if !redirect && (check == nil || !strings.Contains(check.Error(), tt.want) || !strings.Contains(check.Error(), "blocked")) {
				t.Errorf("Check = %v, want a refusal saying %q", check, tt.want)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the runtime API was reached %d times", n)
	}
}

// The wrapper sits above the guard: it sees requests, the guard still
// refuses the dial.
func TestEndpointsWrap(t *testing.T) {
	var wrapped atomic.Int32
	e := NewEndpoints(Options{}, func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) { wrapped.Add(1); return rt.RoundTrip(r) })
	})
	_, err := e.Client().Get("http://169.254.169.254/")
	if err == nil || !strings.Contains(err.Error(), "metadata") || wrapped.Load() != 1 {
		t.Errorf("Get = %v, wrapper calls %d; want a metadata refusal through the wrapper", err, wrapped.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
