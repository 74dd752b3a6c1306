package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile egress: a workflow author points a toolset or a model baseUrl at
// the Lambda runtime API, a metadata address, or a server that redirects
// there. Each case must fail its node with a message saying it was blocked,
// reach nothing, leak no secret, and leave the runner serving. Helpers are
// prefixed egress.

const (
	egressToken  = "egress-runner-token"
	egressSecret = "Sup3r Secret/Key+1" // needs percent-encoding
)

// egressRunner serves the real handler with AWS_LAMBDA_RUNTIME_API set to
// runtimeAPI, and returns its URL and its log buffer.
func egressRunner(t *testing.T, runtimeAPI string) (string, *bytes.Buffer) {
	t.Helper()
	cfg := testConfig(t, map[string]string{"AWS_LAMBDA_RUNTIME_API": runtimeAPI, "RUNNER_TOKENS": egressToken})
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	h, err := newHandler(context.Background(), cfg, staticSource(t, cfg), logger, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, &logs
}

// egressExecute posts body and returns the whole stream.
func egressExecute(t *testing.T, runner, body string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", runner+"/v1/executions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+egressToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// egressNoSecret fails when any common form of egressSecret is in text.
func egressNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, f := range []string{egressSecret, strings.ToLower(egressSecret), url.QueryEscape(egressSecret), url.PathEscape(egressSecret), "Sup3r"} {
		if strings.Contains(text, f) {
			t.Errorf("%s holds the secret as %q:\n%s", where, f, text)
		}
	}
}

func TestHostileEgress(t *testing.T) {
	var runtimeHits atomic.Int32
	runtimeAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runtimeHits.Add(1)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	defer runtimeAPI.Close()
	rtAddr := strings.TrimPrefix(runtimeAPI.URL, "http://")
	_, rtPort, _ := strings.Cut(rtAddr, ":")
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// /rt/... goes to the runtime API by address, /name/... by name.
		target := "http://" + rtAddr
		if strings.HasPrefix(r.URL.Path, "/name/") {
			target = "http://localhost:" + rtPort
		}
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()

	runner, logs := egressRunner(t, rtAddr)

	toolWF := func(toolsetURL string) string {
		return `{"version":1,"workflow":{"nodes":[{"id":"t","type":"tool","with":{"toolset":"x","tool":"echo","arguments":{}}}]},
			"runtime":{"toolsets":[{"name":"x","url":` + jsonString(toolsetURL) + `,"headers":{"Authorization":"Bearer ` + egressSecret + `"},"timeoutMs":5000}]},
			"toolPolicies":[{"match":"x/*","decision":"allow"}]}`
	}
	modelWF := func(baseURL string) string {
		return `{"version":1,"workflow":{"nodes":[{"id":"m","type":"model","with":{"role":"general","prompt":"hi"}}]},
			"runtime":{"models":[{"role":"general","provider":"openai","model":"m","apiKey":"` + egressSecret + `","baseUrl":` + jsonString(baseURL) + `}]}}`
	}
	tests := []struct {
		name, body, want string
	}{
		{"toolset at the runtime API", toolWF("http://" + rtAddr + "/mcp"), "blocked by the runner"},
		{"toolset at the runtime API, IPv4-mapped", toolWF("http://[::ffff:127.0.0.1]:" + rtPort + "/mcp"), "blocked by the runner"},
		{"toolset at the runtime API by name", toolWF("http://localhost:" + rtPort + "/mcp"), "blocked by the runner"},
		{"toolset redirected to the runtime API", toolWF(redirector.URL + "/rt/mcp"), "blocked by the runner"},
		{"toolset redirected to the runtime API by name", toolWF(redirector.URL + "/name/mcp"), "blocked by the runner"},
		{"toolset at the metadata address", toolWF("http://169.254.169.254/latest/meta-data/"), "metadata address"},
		{"toolset at a mapped link-local address", toolWF("http://[::ffff:169.254.1.1]/mcp"), "link-local"},
		{"model baseUrl at the runtime API", modelWF("http://" + rtAddr + "/v1"), "blocked by the runner"},
		{"model baseUrl at IMDS over IPv6", modelWF("http://[fd00:ec2::254]/v1"), "metadata address"},
		// The OpenAI SDK refuses a redirect off its base URL's origin by
		// itself; the guard would refuse the dial were it ever made.
		// A model call follows no redirect at all (its credentials would go
		// along): refused before the guard is even asked.
		{"model baseUrl redirected to the runtime API by name", modelWF(redirector.URL + "/name/v1"), "never follow"},
		{"model baseUrl redirected to the runtime API", modelWF(redirector.URL + "/rt/v1"), "never follow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			stream := egressExecute(t, runner, tt.body)
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %v", d)
			}
			if !strings.Contains(stream, `"node.failed"`) || !strings.Contains(stream, tt.want) {
				t.Errorf("stream has no node.failed saying %q:\n%s", tt.want, stream)
			}
			if n := strings.Count(stream, `"type":"error"`) + strings.Count(stream, `"type":"result"`); n != 1 {
				t.Errorf("%d terminal events:\n%s", n, stream)
			}
			egressNoSecret(t, "stream", stream)
			if hello := egressExecute(t, runner, `{"version":1,"workflow":{"nodes":[{"id":"s","type":"set","with":{"value":1}}]}}`); !strings.Contains(hello, `"status":"completed"`) {
				t.Errorf("next request not served:\n%s", hello)
			}
		})
	}
	egressNoSecret(t, "logs", logs.String())
	if n := runtimeHits.Load(); n != 0 {
		t.Errorf("the runtime API was reached %d times", n)
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
