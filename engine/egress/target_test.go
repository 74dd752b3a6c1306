package egress

import (
	"github.com/runnerd/lambda-runner/protocol"

	"net/url"
	"strings"
	"testing"
)

func TestTargetRefusals(t *testing.T) {
	tests := []struct {
		url  string
		code protocol.Code
		want string
	}{
		{"ftp://files.example.com/x", protocol.CodeHTTPBlocked, `scheme "ftp" is not allowed`},
		{"file:///etc/passwd", protocol.CodeHTTPBlocked, `scheme "file" is not allowed`},
		{"gopher://127.0.0.1:6379/_", protocol.CodeHTTPBlocked, "only http and https"},
		{"https://user:hunter2@api.example.com/", protocol.CodeHTTPBlocked, "userinfo is not allowed"},
		{"https://user@api.example.com/", protocol.CodeHTTPBlocked, "userinfo is not allowed"},
		{"//api.example.com/x", protocol.CodeHTTPError, "must be absolute"},
		{"/relative", protocol.CodeHTTPError, "must be absolute"},
		{"http:api.example.com", protocol.CodeHTTPError, "must have //host"},
		{"http:///path", protocol.CodeHTTPError, "no host"},
		{"http://api.example.com:0/", protocol.CodeHTTPError, "bad port"},
		{"http://api.example.com:70000/", protocol.CodeHTTPError, "bad port"},
		{"http://bücher.example/", protocol.CodeHTTPError, "must be ASCII"},
		{"http://a..b/", protocol.CodeHTTPError, "host must be"},
		{"http://[fe80::1%25eth0]/", protocol.CodeHTTPError, "zones"},
		{"http://exa mple.com/?token=hunter2", protocol.CodeHTTPError, "invalid URL"},
	}
	for _, tt := range tests {
		c := newClient(t, protocol0(), Options{})
		_, err := c.Do(t.Context(), &Request{URL: tt.url, Authorize: failAuthorize(t)})
		wantError(t, err, tt.code, tt.want)
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: message %q leaks the password", tt.url, err)
		}
	}
}

func TestCheckTargetHost(t *testing.T) {
	tests := []struct{ url, host string }{
		{"http://API.example.COM/", "api.example.com"},
		{"https://api.example.com.:8443/x", "api.example.com"},
		{"http://127.0.0.1:8080/", "127.0.0.1"},
		{"http://[::1]:8080/", "::1"},
		{"http://[2001:DB8:0::1]/", "2001:db8::1"},
		{"http://under_score.example/", "under_score.example"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		host, err := checkTarget(u)
		if err != nil || host != tt.host {
			t.Errorf("checkTarget(%s) = %q, %v; want %q", tt.url, host, err, tt.host)
		}
	}
}

func TestAppendQuery(t *testing.T) {
	tests := []struct {
		name  string
		url   string
		query map[string]any
		want  string // RawQuery
		err   string
	}{
		{"none", "http://h/p?z=1", nil, "z=1", ""},
		{"scalars", "http://h/p", map[string]any{"s": "x y&z", "f": 1.5, "i": 3.0, "b": true, "n": 7, "big": 1e21}, "b=true&big=1000000000000000000000&f=1.5&i=3&n=7&s=x+y%26z", ""},
		{"arrays", "http://h/p", map[string]any{"a": []any{"p", 2.0, false, nil}, "s": []string{"x", "y"}}, "a=p&a=2&a=false&s=x&s=y", ""},
		{"null omitted", "http://h/p", map[string]any{"a": nil, "b": "1"}, "b=1", ""},
		{"keeps existing query as written", "http://h/p?sig=a%2Fb&z", map[string]any{"a": "1"}, "sig=a%2Fb&z&a=1", ""},
		{"escaped key", "http://h/p", map[string]any{"a b": "c"}, "a+b=c", ""},
		{"object refused", "http://h/p", map[string]any{"obj": map[string]any{"k": "secret-v"}}, "", `query parameter "obj": unsupported value of type object`},
		{"nested array refused", "http://h/p", map[string]any{"arr": []any{[]any{"secret-v"}}}, "", `query parameter "arr": array element 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, _ := url.Parse(tt.url)
			err := appendQuery(u, tt.query)
			if tt.err != "" {
				wantError(t, err, protocol.CodeHTTPError, tt.err)
				if strings.Contains(err.Error(), "secret-v") {
					t.Errorf("message %q leaks a query value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.RawQuery != tt.want {
				t.Errorf("RawQuery = %q, want %q", u.RawQuery, tt.want)
			}
		})
	}
}

// FuzzParseTarget checks the invariants the policy relies on for any URL
// the parser accepts, and that messages never show the query.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"http://api.example.com/x?token=1", "https://[::1]:80/", "http://user:pw@h/", "HTTP://H.EXAMPLE./a#frag",
		"http://127.0.0.1%2e/", "http://[fe80::1%25eth0]/", "ftp://x/", "http://xn--bcher-kva.example/?q=%00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, host, err := parseTarget(raw)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("parseTarget(%q) error %T, want *Error", raw, err)
			}
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Errorf("scheme %q accepted", u.Scheme)
		}
		if u.User != nil {
			t.Errorf("userinfo accepted in %q", raw)
		}
		if host == "" || host != strings.ToLower(host) || strings.HasSuffix(host, ".") {
			t.Errorf("host %q is not normalised", host)
		}
		for i := 0; i < len(host); i++ {
			if host[i] >= 0x80 || host[i] <= ' ' || strings.IndexByte("/?#@[]%", host[i]) >= 0 {
				t.Fatalf("host %q from %q has byte %q", host, raw, host[i])
			}
		}
		d := describe(u)
		if strings.ContainsAny(d, "?#") {
			t.Errorf("describe(%q) = %q shows query or fragment", raw, d)
		}
		if du, err := url.Parse(d); err != nil || du.User != nil {
			t.Errorf("describe(%q) = %q: not a URL without userinfo", raw, d)
		}
	})
}
