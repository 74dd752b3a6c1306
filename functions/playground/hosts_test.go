package playground_test

import (
	"net/http/httptest"
	"testing"

	"github.com/runnerd/lambda-runner/functions/playground"
)

func TestAllowHosts(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		dev      bool
		yes, no  []string
	}{
		{"service, no list: any name", nil, false,
			[]string{"runner.internal", "10.0.0.7", "127.0.0.1", "anything.example"}, nil},
		{"dev, no list: the loopback", nil, true,
			[]string{"localhost", "127.0.0.1", "::1"}, []string{"runner.internal", "127.0.0.2", "a.localhost"}},
		{"service, listed", []string{"runner.internal", "*.svc.local", "10.0.0.7", "fd00::1"}, false,
			[]string{"runner.internal", "a.svc.local", "b.a.svc.local", "10.0.0.7", "fd00::1"},
			[]string{"svc.local", "runner.internal.evil", "xsvc.local", "127.0.0.1", "localhost", "10.0.0.8"}},
		{"dev, listed: the loopback too", []string{"runner.internal"}, true,
			[]string{"runner.internal", "localhost", "127.0.0.1"}, []string{"other.example"}},
		{"star", []string{"*"}, false, []string{"x", "127.0.0.1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := playground.AllowHosts(tt.patterns, tt.dev)
			for _, h := range tt.yes {
				if !ok(h) {
					t.Errorf("%q refused", h)
				}
			}
			for _, h := range tt.no {
				if ok(h) {
					t.Errorf("%q allowed", h)
				}
			}
		})
	}
}

// NewNamed: the API under the names allowed, the page under the loopback's
// only, whatever the API allows.
func TestNewNamedKeepsThePageOnTheLoopback(t *testing.T) {
	h := playground.NewNamed(api, playground.AllowHosts(nil, false))
	tests := []struct {
		target, host string
		status       int
	}{
		{"/v1/capabilities", "runner.internal:8080", 200},
		{"/v1/capabilities", "RUNNER.internal.", 200},
		{"/playground/", "runner.internal:8080", 403},
		{"/playground", "runner.internal", 403},
		{"/playground/app.js", "127.0.0.1:8080", 200},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "http://x"+tt.target, nil)
		r.Host = tt.host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.status {
			t.Errorf("GET %s, Host %q: %d, want %d", tt.target, tt.host, w.Code, tt.status)
		}
	}
}
