//go:build !noopenai && !noanthropic && !nobedrock

package models

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/protocol"
)

// TestHostileTrustedEndpointRedirect: an endpoint the operator trusts
// (RUNNER_MODEL_ENDPOINTS) answers a Bedrock call signed with the role's
// credentials with a redirect to a host nobody trusts. The guarded
// endpoints client follows it and net/http forwards every header but
// Authorization and cookies to the new host, so X-Amz-Security-Token (the
// whole session token) and X-Amz-Date reach it. The role's credentials
// must go to the trusted origin only: no hop to another origin may carry
// them.
func TestHostileTrustedEndpointRedirect(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusSeeOther, http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			awsTestEnv(t)
			for k, v := range ambient {
				t.Setenv(k, v)
			}
			var mu sync.Mutex
			var seen []string
			untrusted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var sb strings.Builder
				_ = r.Header.Write(&sb)
				mu.Lock()
				seen = append(seen, sb.String())
				mu.Unlock()
				w.WriteHeader(http.StatusBadRequest)
			}))
			t.Cleanup(untrusted.Close)
			// Another name of the same machine: another origin.
			target := strings.Replace(untrusted.URL, "127.0.0.1", "localhost", 1)
			trusted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target+r.URL.Path, code)
			}))
			t.Cleanup(trusted.Close)

			e := egress.NewEndpoints(egress.Options{}, nil)
			c := &Clients{HTTPClient: e.Client(), MaxRetries: -1, TrustedEndpoints: []string{trusted.URL}}
			t.Cleanup(e.Client().CloseIdleConnections)
			m := protocol.Model{Provider: "bedrock", Model: "m", BaseURL: trusted.URL}
			p, err := c.Provider(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = p.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
			mu.Lock()
			all := strings.Join(seen, "\n")
			mu.Unlock()
			for name, v := range ambient {
				for _, f := range ambientForms(v) {
					if v != "" && strings.Contains(all, f) {
						t.Errorf("%s reached %s after a %d from the trusted endpoint:\n%s", name, target, code, all)
						break
					}
				}
			}
			if strings.Contains(all, "X-Amz-Security-Token") {
				t.Errorf("a session token header reached the untrusted host after a %d:\n%s", code, all)
			}
		})
	}
}
