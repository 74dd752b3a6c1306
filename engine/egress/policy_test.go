package egress

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

func TestNewValidatesPolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy protocol.HTTPPolicy
		paths  []string // protocol.Detail paths, in order; nil for a valid policy
	}{
		{"zero", protocol.HTTPPolicy{}, nil},
		{"good", protocol.HTTPPolicy{
			AllowHosts: []string{"*.example.com", "api.example.org", "[::1]", "10.0.0.*"},
			DenyHosts:  []string{"*"},
			Methods:    []string{"GET", "post", "PROPFIND"},
			TimeoutMs:  1000, MaxResponseBytes: 10, MaxRequests: 3, MaxRedirects: intPtr(0),
		}, nil},
		{"bad hosts", protocol.HTTPPolicy{
			AllowHosts: []string{"ok.example.com", "", "https://api.example.com"},
			DenyHosts:  []string{"a.example.com", "x y", "api.example.com:443", "**.example.com"},
		}, []string{
			"runtime.http.policy.allowHosts[1]",
			"runtime.http.policy.allowHosts[2]",
			"runtime.http.policy.denyHosts[1]",
			"runtime.http.policy.denyHosts[2]",
			"runtime.http.policy.denyHosts[3]",
		}},
		{"bad methods", protocol.HTTPPolicy{Methods: []string{"GET", "", "GE T", "PO/ST"}}, []string{
			"runtime.http.policy.methods[1]",
			"runtime.http.policy.methods[2]",
			"runtime.http.policy.methods[3]",
		}},
		{"negative numbers", protocol.HTTPPolicy{MaxResponseBytes: -1, TimeoutMs: -1, MaxRequests: -1, MaxRedirects: intPtr(-1)}, []string{
			"runtime.http.policy.maxResponseBytes",
			"runtime.http.policy.timeoutMs",
			"runtime.http.policy.maxRequests",
			"runtime.http.policy.maxRedirects",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.policy, Options{})
			if c != nil {
				c.Close()
			}
			var got []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var fe *protocol.Detail
					if !errors.As(e, &fe) {
						t.Fatalf("error %v is not a *protocol.Detail", e)
					}
					got = append(got, fe.Path)
				}
			}
			if !slices.Equal(got, tt.paths) {
				t.Errorf("paths = %q, want %q (error: %v)", got, tt.paths, err)
			}
		})
	}
}

// errStop stands in for a permission gate that halts a request after the
// policy passed it, so that policy tests never dial anything.
var errStop = errors.New("stopped by the test's Authorize")

func TestHostAndMethodPolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy protocol.HTTPPolicy
		method string
		url    string
		// blocked is a fragment of the HTTP_BLOCKED message, or "" when
		// the policy lets the request through to Authorize.
		blocked string
		// host is what Authorize must see when the policy lets it through.
		host string
	}{
		{"no policy", protocol.HTTPPolicy{}, "GET", "https://api.example.com/x", "", "api.example.com"},
		{"allow glob subdomain", protocol.HTTPPolicy{AllowHosts: []string{"*.example.com"}}, "GET", "https://api.example.com/x", "", "api.example.com"},
		{"allow glob deep subdomain", protocol.HTTPPolicy{AllowHosts: []string{"*.example.com"}}, "GET", "https://a.b.example.com/x", "", "a.b.example.com"},
		{"allow glob not apex", protocol.HTTPPolicy{AllowHosts: []string{"*.example.com"}}, "GET", "https://example.com/x", "host example.com is not in allowHosts", ""},
		{"allow glob other domain", protocol.HTTPPolicy{AllowHosts: []string{"*.example.com"}}, "GET", "https://api.example.com.evil.net/", "host api.example.com.evil.net is not in allowHosts", ""},
		{"allow exact", protocol.HTTPPolicy{AllowHosts: []string{"api.example.com"}}, "GET", "https://API.Example.COM./x", "", "api.example.com"},
		{"allow ignores port", protocol.HTTPPolicy{AllowHosts: []string{"api.example.com"}}, "GET", "https://api.example.com:8443/x", "", "api.example.com"},
		{"deny beats allow", protocol.HTTPPolicy{AllowHosts: []string{"*.example.com"}, DenyHosts: []string{"admin.example.com"}}, "GET", "https://admin.example.com/", `host admin.example.com is denied by denyHosts pattern "admin.example.com"`, ""},
		{"deny star", protocol.HTTPPolicy{DenyHosts: []string{"*"}}, "GET", "https://api.example.com/", "denied by denyHosts", ""},
		{"deny other", protocol.HTTPPolicy{DenyHosts: []string{"*.evil.net"}}, "GET", "https://api.example.com/", "", "api.example.com"},
		{"allow IPv6 literal", protocol.HTTPPolicy{AllowHosts: []string{"[2001:db8::1]"}}, "GET", "http://[2001:db8:0::1]:8080/", "", "2001:db8::1"},
		{"method allowed", protocol.HTTPPolicy{Methods: []string{"GET", "post"}}, "POST", "https://api.example.com/", "", "api.example.com"},
		{"method lower-case request", protocol.HTTPPolicy{Methods: []string{"GET"}}, "get", "https://api.example.com/", "", "api.example.com"},
		{"method refused", protocol.HTTPPolicy{Methods: []string{"GET", "POST"}}, "DELETE", "https://api.example.com/", "method DELETE to host api.example.com is not in methods (GET, POST)", ""},
		{"method default GET", protocol.HTTPPolicy{Methods: []string{"POST"}}, "", "https://api.example.com/", "method GET", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.policy, Options{})
			var hosts []string
			_, err := c.Do(t.Context(), &Request{
				Method: tt.method, URL: tt.url,
				Authorize: func(_ context.Context, host string) error {
					hosts = append(hosts, host)
					return errStop
				},
			})
			if tt.blocked != "" {
				wantError(t, err, protocol.CodeHTTPBlocked, tt.blocked)
				if len(hosts) != 0 {
					t.Errorf("Authorize called with %q for a request the policy refuses", hosts)
				}
			} else {
				if err != errStop {
					t.Fatalf("error = %v, want the Authorize error itself", err)
				}
				if !slices.Equal(hosts, []string{tt.host}) {
					t.Errorf("Authorize hosts = %q, want [%q]", hosts, tt.host)
				}
			}
			if n := c.Requests(); n != 0 {
				t.Errorf("Requests() = %d, want 0: nothing was sent", n)
			}
		})
	}
}
