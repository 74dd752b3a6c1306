package engine

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// Errors that name a URL (a model call's, an http node's) name it as the
// author wrote it, less its userinfo and query, through the execution's
// redactor: an author who puts a secret in a path learns nothing from the
// message, whichever secret it is (the entry's own key, another entry's,
// a runtime.http secret).
func TestHostileSecretsInErrorURLs(t *testing.T) {
	srv := newFakeModel(t, func(int, map[string]any, http.Header) (int, string) { return 404, "" })
	const (
		ownKey   = "sk-own-key-4711"
		otherKey = "sk-other-key-0815"
		httpSec  = "hs-path-secret-42"
	)
	tests := []struct {
		name, path, secret string
	}{
		{"the entry's own key in its path", "/" + ownKey + "/v1", ownKey},
		{"another entry's key in the path", "/" + otherKey + "/v1", otherKey},
		{"a runtime.http secret in the path", "/" + httpSec + "/v1", httpSec},
		{"a key percent-encoded in the path", "/" + strings.ReplaceAll(ownKey, "-", "%2D") + "/v1", ownKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, logs := svcEngine(t, nil)
			models := fmt.Sprintf(`[{"role":"general","provider":"openai","model":"m","apiKey":%q,"baseUrl":%q},
				{"role":"other","provider":"openai","model":"m","apiKey":%q,"baseUrl":%q}]`, ownKey, srv.URL+tt.path, otherKey, srv.URL+"/v1")
			s := svcRun(t, e, svcReq{
				workflow: `{"nodes":[{"id":"m","type":"model","with":{"prompt":"x"}}]}`,
				runtime:  `{"models":` + models + `,"http":{"secrets":{"k":{"value":"` + httpSec + `","hosts":["127.0.0.1"]}}}}`,
			})
			s.failure(t)
			f := s.nodeFailed("m")
			if f == nil || f.Error.Code != protocol.CodeModelError {
				t.Fatalf("node.failed = %+v, want MODEL_ERROR", f)
			}
			if !strings.Contains(f.Error.Message, "openai 404 ") || !strings.Contains(f.Error.Message, " from http://127.0.0.1:") || !strings.Contains(f.Error.Message, redact.Marker) {
				t.Errorf("message %q, want the URL with the secret redacted", f.Error.Message)
			}
			for _, ev := range s.all() {
				if line := fmt.Sprintf("%+v", ev); strings.Contains(line, tt.secret) || strings.Contains(line, strings.ReplaceAll(tt.secret, "-", "%2D")) {
					t.Errorf("an event shows the secret: %s", line)
				}
			}
			if strings.Contains(logs.String(), tt.secret) {
				t.Errorf("the logs show the secret")
			}
		})
	}
}
