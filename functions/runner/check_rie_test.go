//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/conformance"
)

// functionURLFront plays the Lambda function URL front for the emulator:
// it turns each HTTP request into a function URL event, as the real front
// does after reading the whole request, invokes the bootstrap under
// aws-lambda-rie and answers with the streamed response's prelude and body.
func functionURLFront(r *rie) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, "front: reading the body: "+err.Error(), http.StatusBadGateway)
			return
		}
		headers := map[string]any{}
		for k, v := range req.Header {
			headers[strings.ToLower(k)] = strings.Join(v, ",")
		}
		ev := functionURLEvent(req.Method, req.URL.Path, "", string(body))
		ev["headers"] = headers
		payload, _ := json.Marshal(ev)
		ireq, _ := http.NewRequestWithContext(req.Context(), http.MethodPost, r.url, bytes.NewReader(payload))
		resp, err := rieClient.Do(ireq)
		if err != nil {
			http.Error(w, "front: invoking: "+err.Error(), http.StatusBadGateway)
			return
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		head, out, ok := bytes.Cut(raw, make([]byte, 8))
		var p prelude
		if err != nil || !ok || json.Unmarshal(head, &p) != nil {
			http.Error(w, "front: not a streamed response", http.StatusBadGateway)
			return
		}
		for k, v := range p.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(p.StatusCode)
		w.Write(out)
	})
}

// The conformance kit (runnerctl check) passes against the bootstrap as
// Lambda runs it, through function URL events.
func TestConformanceUnderRIE(t *testing.T) {
	r := startRIE(t, lambdaEnv(t, nil))
	front := httptest.NewServer(functionURLFront(r))
	t.Cleanup(front.Close)
	c := &conformance.Checker{URL: front.URL + "/", Token: testToken, Timeout: 30 * time.Second}
	rep := c.Run(context.Background())
	for _, res := range rep.Results {
		if res.Status == conformance.Fail {
			t.Errorf("%s: %s", res.ID, res.Reason)
		}
		if res.Status == conformance.Skip {
			t.Logf("%s skipped: %s", res.ID, res.Reason)
		}
	}
	if rep.Passed < len(conformance.Rules())-1 {
		t.Errorf("only %d of %d checks passed: %+v", rep.Passed, len(conformance.Rules()), rep)
	}
	if strings.Contains(r.out.String(), testToken) {
		t.Error("a token reached the function's output")
	}
}
