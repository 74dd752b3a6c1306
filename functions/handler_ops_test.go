package functions_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// A 400's log line names the paths of its problems, never the values the
// request carried, and every refused request reaches OnResponse.
func TestOpsRefusalsAreLoggedAndCounted(t *testing.T) {
	const secretish = "s3cr3t-v4lue-never-logged"
	tests := []struct {
		name, auth, body string
		status           int
		wantLog          string
	}{
		{"invalid", "Bearer " + goodToken,
			`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","needs":["ghost"],"with":{"value":"` + secretish + `"}}]}}`,
			http.StatusBadRequest, `problems=1 paths=[workflow.nodes[0].needs[0]]`},
		{"no token", "", `{}`, http.StatusUnauthorized, "unauthorized"},
		{"bad token", "Bearer " + secretish, `{}`, http.StatusUnauthorized, "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := newHandler(t, nil)
			h.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			var got []int
			h.OnResponse = func(_ context.Context, status int) { got = append(got, status) }
			rec := serve(h, http.MethodPost, protocol.PathExecutions, tt.auth, strings.NewReader(tt.body))
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if len(got) != 1 || got[0] != tt.status {
				t.Errorf("OnResponse got %v, want [%d]", got, tt.status)
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, logs.String())
			}
			if strings.Contains(logs.String(), secretish) {
				t.Errorf("log carries a request value:\n%s", logs.String())
			}
		})
	}
}

// An accepted execution is no refusal, and its summary has the time to
// accepted.
func TestOpsAcceptedIsNotARefusal(t *testing.T) {
	h := newHandler(t, nil)
	h.OnResponse = func(_ context.Context, status int) { t.Errorf("OnResponse(%d) for an accepted execution", status) }
	var sum protocol.Summary
	h.OnExecution = func(_ context.Context, s protocol.Summary) { sum = s }
	rec := serve(h, http.MethodPost, protocol.PathExecutions, "Bearer "+goodToken,
		strings.NewReader(`{"version":1,"workflow":{"nodes":[{"id":"a","type":"fail","with":{"message":"no"}}]}}`))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if sum.Accepted <= 0 || sum.Status != "failed" || sum.Code != protocol.CodeFailed ||
		len(sum.Failures) != 1 || sum.Failures[0] != (protocol.NodeFailures{NodeType: "fail", Code: protocol.CodeFailed, Count: 1}) {
		t.Errorf("summary %+v", sum)
	}
}
