//go:build !noopenai && !noanthropic && !nobedrock

package models

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// ambient are credentials the runner's process holds of its own, set in
// its environment for TestHostileAmbientCredentials. None may reach an
// endpoint a model entry names.
var ambient = map[string]string{
	"AWS_ACCESS_KEY_ID":        "AKIDAMBIENTROLE0001",
	"AWS_SECRET_ACCESS_KEY":    "ambient-role-secret-key-0001",
	"AWS_SESSION_TOKEN":        "ambient-role-session-token-0001",
	"AWS_BEARER_TOKEN_BEDROCK": "ambient-bedrock-bearer-0001",
	"OPENAI_API_KEY":           "sk-ambient-openai-0001",
	"OPENAI_ADMIN_KEY":         "sk-ambient-openai-admin-0001",
	"OPENAI_ORG_ID":            "org-ambient-0001",
	"OPENAI_PROJECT_ID":        "proj-ambient-0001",
	"OPENAI_CUSTOM_HEADERS":    "X-Ambient: ambient-openai-header-0001",
	"ANTHROPIC_API_KEY":        "sk-ant-ambient-0001",
	"ANTHROPIC_AUTH_TOKEN":     "ambient-anthropic-token-0001",
	"ANTHROPIC_CUSTOM_HEADERS": "X-Ambient: ambient-anthropic-header-0001",
}

// ambientForms are the forms in which a credential could travel: as it is,
// cased, base64 (either alphabet, padded or not), hex and URL-escaped.
func ambientForms(v string) []string {
	out := []string{v, strings.ToLower(v), strings.ToUpper(v), url.QueryEscape(v), hex.EncodeToString([]byte(v))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)))
	}
	return out
}

// rawRecorder keeps every byte of every request it is sent: the request
// line, every header and the body. It speaks TLS, as bearer tokens are
// sent only over it.
type rawRecorder struct {
	*httptest.Server
	mu  sync.Mutex
	raw []string
}

func newRawRecorder(t *testing.T) *rawRecorder {
	r := &rawRecorder{}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var sb strings.Builder
		sb.WriteString(req.Method + " " + req.RequestURI + "\n")
		_ = req.Header.Write(&sb)
		b, _ := io.ReadAll(req.Body)
		sb.Write(b)
		r.mu.Lock()
		r.raw = append(r.raw, sb.String())
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"no"},"message":"no"}`)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *rawRecorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.raw...)
}

// TestHostileAmbientCredentials points the real SDK clients of every
// provider at a server of the test's, with every credential the runner
// could hold in its environment, and checks that none of them, in any
// form, reaches it: an entry sends its own apiKey or nothing, and a
// Bedrock entry naming a baseUrl without an apiKey is refused before any
// request, naming the field. The last case, an endpoint the operator
// trusts, is where the role's credentials do go: it shows the check sees
// them when they are sent.
func TestHostileAmbientCredentials(t *testing.T) {
	tests := []struct {
		name      string
		entry     func(srv string) protocol.Model
		trusted   func(srv string) []string
		refused   bool   // Provider fails naming apiKey, nothing sent
		wantAuth  string // a header line the server must see ("" for none)
		wantLeaks []string
	}{
		{name: "openai, no key", entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "openai", Model: "m", BaseURL: s + "/v1"}
		}},
		{name: "openai, own key", entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "openai", Model: "m", BaseURL: s + "/v1", APIKey: "entry-key-openai"}
		}, wantAuth: "Authorization: Bearer entry-key-openai"},
		{name: "anthropic, no key", entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "anthropic", Model: "m", BaseURL: s}
		}},
		{name: "anthropic, own key", entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "anthropic", Model: "m", BaseURL: s, APIKey: "entry-key-anthropic"}
		}, wantAuth: "Authorization: Bearer entry-key-anthropic"},
		{name: "bedrock, no key", refused: true, entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "bedrock", Model: "m", BaseURL: s}
		}},
		{name: "bedrock, blank key", refused: true, entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "bedrock", Model: "m", BaseURL: s, APIKey: "  "}
		}},
		{name: "bedrock, no key, a region", refused: true, entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "bedrock", Model: "m", BaseURL: s, Region: "eu-west-1"}
		}},
		{name: "bedrock, no key, user info naming a trusted host", refused: true, entry: func(s string) protocol.Model {
			u, _ := url.Parse(s)
			return protocol.Model{Provider: "bedrock", Model: "m", BaseURL: "https://" + u.Host + "@" + u.Host}
		}, trusted: func(s string) []string { return []string{s} }},
		{name: "bedrock, no key, another port of a trusted host", refused: true, entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "bedrock", Model: "m", BaseURL: s}
		}, trusted: func(s string) []string {
			u, _ := url.Parse(s)
			return []string{"https://" + u.Hostname() + ":1", "http://" + u.Host}
		}},
		{name: "bedrock, own key", entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "bedrock", Model: "m", BaseURL: s, APIKey: "entry-key-bedrock"}
		}, wantAuth: "Authorization: Bearer entry-key-bedrock"},
		{name: "bedrock, own key, trusted endpoint", entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "bedrock", Model: "m", BaseURL: s + "/", APIKey: "entry-key-bedrock"}
		}, trusted: func(s string) []string { return []string{s} }, wantAuth: "Authorization: Bearer entry-key-bedrock"},
		{name: "bedrock, no key, trusted endpoint (control)", entry: func(s string) protocol.Model {
			return protocol.Model{Provider: "bedrock", Model: "m", BaseURL: strings.ToUpper(s[:4]) + s[4:] + "/x"}
		}, trusted: func(s string) []string { return []string{s} },
			wantLeaks: []string{"AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			awsTestEnv(t)
			for k, v := range ambient {
				t.Setenv(k, v)
			}
			srv := newRawRecorder(t)
			c := &Clients{HTTPClient: srv.Client(), MaxRetries: -1}
			t.Cleanup(srv.Client().CloseIdleConnections)
			if tt.trusted != nil {
				c.TrustedEndpoints = tt.trusted(srv.URL)
			}
			m := tt.entry(srv.URL)
			p, err := c.Provider(context.Background(), m)
			if tt.refused {
				var me *Error
				if !errors.As(err, &me) || !strings.Contains(me.Message, "apiKey is required") {
					t.Fatalf("Provider = %v, want an error naming apiKey", err)
				}
				if err := c.CheckCredentials("runtime.models", []protocol.Model{m}); err == nil ||
					!strings.Contains(err.Error(), "runtime.models[0].apiKey") {
					t.Errorf("CheckCredentials = %v, want a problem at runtime.models[0].apiKey", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if err := c.CheckCredentials("runtime.models", []protocol.Model{m}); err != nil {
					t.Errorf("CheckCredentials = %v, want none", err)
				}
				if _, err = p.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
					t.Logf("Complete: %v", err) // the server refuses every call
				}
			}
			reqs := srv.requests()
			if tt.refused && len(reqs) > 0 {
				t.Fatalf("%d requests sent, want none", len(reqs))
			}
			if !tt.refused && len(reqs) == 0 {
				t.Fatal("no request sent")
			}
			all := strings.Join(reqs, "\n")
			if tt.wantAuth != "" && !strings.Contains(all, tt.wantAuth) {
				t.Errorf("the server did not see %q:\n%s", tt.wantAuth, all)
			}
			leaked := map[string]bool{}
			for name, v := range ambient {
				for _, f := range ambientForms(v) {
					if strings.Contains(all, f) {
						leaked[name] = true
					}
				}
			}
			for _, name := range tt.wantLeaks {
				if !leaked[name] {
					t.Errorf("control: %s not seen at the trusted endpoint; the check is blind", name)
				}
				delete(leaked, name)
			}
			for name := range leaked {
				t.Errorf("%s reached the endpoint:\n%s", name, all)
			}
		})
	}
}

func TestEndpointOrigin(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com", "https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com:443", true},
		{"HTTPS://Gw.Example.COM:443/v1/", "https://gw.example.com:443", true},
		{"http://10.0.0.1", "http://10.0.0.1:80", true},
		{"http://[fd00::1]:8080/x", "http://fd00::1:8080", true},
		{"https://gw.example.com@evil.example/", "", false},
		{"https://user:pass@gw.example.com/", "", false},
		{"ftp://gw.example.com/", "", false},
		{"gw.example.com", "", false},
		{"https:gw.example.com", "", false},
		{"https://gw.example.com.:443", "https://gw.example.com.:443", true}, // not gw.example.com's: fails closed
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := endpointOrigin(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("endpointOrigin(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestIsRegion: a region becomes part of AWS's endpoint host, which is
// sent the IAM role's credentials; only a region's form may.
func TestIsRegion(t *testing.T) {
	for in, want := range map[string]bool{
		"us-east-1": true, "us-gov-west-1": true, "eu-isoe-west-1": true, "eusc-de-east-1": true, "ap-southeast-7": true,
		"s3": false, "x.s3": false, "us-east-1.evil.example": false, "us-east-1/": false, "US-EAST-1": false,
		"us-east-1-fips": false, "us-east-": false, "-us-east-1": false, "us--1": false, "u-east-1": false, "us-east-1#": false,
	} {
		if got := isRegion(in); got != want {
			t.Errorf("isRegion(%q) = %v, want %v", in, got, want)
		}
	}
}
