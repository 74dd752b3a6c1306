package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A Bedrock model node through the built bootstrap: its AWS configuration
// comes from the environment Lambda provides (region, the role's keys, the
// endpoint variable), read by the loader the build links (infra/awsconfig;
// the environment alone in the default Lambda build). The local server
// speaks Converse and checks the request is signed with those keys.
func TestRIEBedrock(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	bedrock := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.EscapedPath()+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"Hello from Bedrock"}]}},
			"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":4,"totalTokens":7},"metrics":{"latencyMs":1}}`)
	}))
	defer bedrock.Close()

	r := startRIE(t, lambdaEnv(t, map[string]string{
		"RUNNER_MODELS":                    `[{"role":"general","provider":"bedrock","model":"amazon.nova-test-v1:0"}]`,
		"RUNNER_HTTP_ALLOW_CIDRS":          "127.0.0.0/8",
		"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock.URL,
		"AWS_ACCESS_KEY_ID":                "AKIDRUNNERBEDROCK",
		"AWS_SECRET_ACCESS_KEY":            "runner-test-secret-key",
	}))
	body := `{"version":1,"workflow":{"nodes":[{"id":"m","type":"model","with":{"role":"general","prompt":"Hi"}}],"output":"${{ nodes.m.output }}"}}`
	p, stream := r.streamed(t, functionURLEvent("POST", "/v1/executions", testToken, body), "rie-bedrock-1")
	if p.StatusCode != 200 {
		t.Fatalf("status %d: %s", p.StatusCode, stream)
	}
	evs := checkStream(t, stream)
	last := evs[len(evs)-1]
	if last["type"] != "result" || last["status"] != "completed" || !strings.Contains(string(stream), "Hello from Bedrock") {
		t.Fatalf("terminal event %v", last)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("Bedrock got %d requests, want 1: %q", len(seen), seen)
	}
	if want := "POST /model/amazon.nova-test-v1%3A0/converse AWS4-HMAC-SHA256 Credential=AKIDRUNNERBEDROCK/"; !strings.HasPrefix(seen[0], want) ||
		!strings.Contains(seen[0], "/eu-west-1/bedrock/aws4_request") {
		t.Errorf("request %q, want %s… signed for eu-west-1", seen[0], want)
	}
}
