package wftest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runnerd/lambda-runner/protocol/redact"
)

// Secrets the recorded services are given, and echo back in their
// replies and headers: none may reach the written file.
const (
	openAIKey  = "sk-openai-rec-0123456789"
	anthropKey = "sk-ant-rec-0123456789"
	mcpToken   = "mcp-token-rec-0123456789"
	httpSecret = "http-secret-rec-0123456789"
)

// services are the real services of a recorded case: an OpenAI-compatible
// chat completions server, an Anthropic messages server, an MCP server (the
// go-sdk's) and a plain HTTP server.
type services struct {
	openai, anthropic, mcp, http *httptest.Server
	mu                           sync.Mutex
	openaiCalls                  int
}

func startServices(t *testing.T) *services {
	t.Helper()
	s := &services{}
	s.openai = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.openaiCalls++
		n := s.openaiCalls
		s.mu.Unlock()
		msg := map[string]any{"role": "assistant", "content": "approve; my key was " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
		finish := "stop"
		if n == 1 {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "shop__get_order", "arguments": `{"id":42}`}}}}
			finish = "tool_calls"
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-rec",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 100 + n, "completion_tokens": n, "total_tokens": 101 + 2*n}})
	}))
	s.anthropic = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-rec",
			"content":     []any{map[string]any{"type": "text", "text": "looks fine"}},
			"stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 7, "output_tokens": 2}})
	}))
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "get_order", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"total": 10}`}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	s.mcp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+mcpToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	s.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "r-1")
		w.Header().Set("X-Api-Key", httpSecret)
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		w.Header().Set("Set-Cookie", "session="+httpSecret)
		writeJSON(w, http.StatusOK, map[string]any{"total": 10, "echo": r.Header.Get("Authorization"), "path": r.URL.Path})
	}))
	t.Cleanup(s.close)
	return s
}

func (s *services) close() {
	for _, srv := range []*httptest.Server{s.openai, s.anthropic, s.mcp, s.http} {
		srv.Close()
	}
}

// recordCase writes, in dir, a request whose agent (OpenAI) calls a tool,
// whose model node (Anthropic) reviews it, whose http node sends a secret
// and whose node "fixed" calls an address nothing answers; its runtime,
// keys included, stays in that file. The case, which names it, is returned
// with its path.
func recordCase(t *testing.T, dir string, s *services, mocks string, private bool) (string, []byte) {
	t.Helper()
	req := `{"version": 1,
  "workflow": {"nodes": [
    {"id": "agent", "type": "agent", "with": {"role": "general", "prompt": "refund order ${{ input.order }}?", "toolsets": ["shop"], "tools": ["shop/*"], "maxSteps": 4}},
    {"id": "critic", "type": "model", "needs": ["agent"], "with": {"role": "critic", "prompt": "check: ${{ nodes.agent.output.text }}"}},
    {"id": "lookup", "type": "http", "with": {"url": "` + s.http.URL + `/orders/${{ input.order }}", "responseType": "json",
      "headers": {"Authorization": "Bearer ${{ secrets.api }}"}}},
    {"id": "fixed", "type": "http", "with": {"url": "http://127.0.0.1:1/never"}}
  ],
  "output": {"critic": "${{ nodes.critic.output.text }}", "total": "${{ nodes.lookup.output.body.total }}", "fixed": "${{ nodes.fixed.output }}"}},
  "input": {"order": 42},
  "runtime": {
    "models": [
      {"role": "general", "provider": "openai", "model": "gpt-rec", "baseUrl": "` + s.openai.URL + `/v1", "apiKey": "` + openAIKey + `"},
      {"role": "critic", "provider": "anthropic", "model": "claude-rec", "baseUrl": "` + s.anthropic.URL + `", "apiKey": "` + anthropKey + `"}],
    "toolsets": [{"name": "shop", "url": "` + s.mcp.URL + `/mcp", "headers": {"Authorization": "Bearer ` + mcpToken + `"}}],
    "http": {"policy": {"allowPrivateNetwork": ` + strconv.FormatBool(private) + `}, "secrets": {"api": "` + httpSecret + `"}}
  },
  "toolPolicies": [{"match": "shop/*", "decision": "allow"}]
}
`
	c := `{
  "name": "recorded",
  "workflow": "order.json",
  "mocks": ` + mocks + `,
  "expect": {"status": "completed", "output": {"critic": "looks fine", "total": 10, "fixed": {"ok": true}},
             "nodes": {"agent": {"status": "completed"}, "fixed": {"status": "completed"}},
             "calls": {"models": 3, "tools": 1, "http": 1}}
}
`
	path := filepath.Join(dir, "order.test.json")
	if err := os.WriteFile(filepath.Join(dir, "order.json"), []byte(req), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, []byte(c)
}

func noEnv(string) string { return "" }

func TestRecordRoundTrip(t *testing.T) {
	s := startServices(t)
	// Mocks of every kind, replaced by the recording; the pin is kept.
	old := `{"models": [{"role": "general", "replies": [{"text": "stale"}]}],
    "http": [{"url": "https://old.example.com/*", "body": "stale"}],
    "nodes": {"fixed": {"output": {"ok": true}}}}`
	path, _ := recordCase(t, t.TempDir(), s, old, true)
	var out bytes.Buffer
	code := Run(context.Background(), &out, []string{path}, Options{Record: true, Getenv: noEnv})
	src, _ := os.ReadFile(path)
	if code != ExitPass || !strings.Contains(out.String(), "PASS recorded") {
		t.Fatalf("--record: exit %d\n%s\n%s", code, out.String(), src)
	}
	for _, secret := range []string{openAIKey, anthropKey, mcpToken, httpSecret, "session=", "Set-Cookie", "X-Api-Key", "stale"} {
		if bytes.Contains(src, []byte(secret)) {
			t.Errorf("the written file holds %q:\n%s", secret, src)
		}
	}
	for _, want := range []string{
		"{\n  \"name\": \"recorded\",\n  \"workflow\": \"order.json\",\n  \"mocks\": {\n    \"models\": [", // other members kept as written
		`"expect": {"status": "completed", "output": {"critic": "looks fine"`,
		`"name": "shop/get_order"`, `"toolset": "shop"`, `"tool": "get_order"`, `"role": "critic"`, `"text": "looks fine"`,
		`"inputTokens": 7`, `"X-Request-Id": "r-1"`, `"X-Echo": "[REDACTED]"`, `"echo": "[REDACTED]"`,
		`"method": "GET"`, `"url": "` + s.http.URL + `/orders/42"`, `"fixed": {`,
	} {
		if !bytes.Contains(src, []byte(want)) {
			t.Errorf("the written file lacks %s:\n%s", want, src)
		}
	}
	var c Case
	if err := json.Unmarshal(src, &c); err != nil {
		t.Fatalf("%v:\n%s", err, src)
	}
	if len(c.Mocks.Models) != 2 || len(c.Mocks.Models[0].Replies) != 2 || len(c.Mocks.Tools) != 1 || len(c.Mocks.HTTP) != 1 || compact(c.Mocks.Tools[0].Arguments) != `{"id":42}` {
		t.Fatalf("mocks: %+v\n%s", c.Mocks, src)
	}

	// The round trip: the case passes on its recording, every service down.
	s.close()
	out.Reset()
	if code := Run(context.Background(), &out, []string{path}, Options{}); code != ExitPass {
		t.Fatalf("replay: exit %d\n%s\n%s", code, out.String(), src)
	}
}

// TestRecordGuard: --record goes through the egress guard as the
// environment configures it. Model and toolset endpoints may be on the
// loopback (the endpoint guard admits private addresses the operator or
// request names); an http node reaches it only when its policy allows the
// private network or RUNNER_HTTP_ALLOW_CIDRS admits it.
func TestRecordGuard(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		code int
		want string
	}{
		{"the guard refuses the loopback", nil, ExitFail, "refused"},
		{"RUNNER_HTTP_ALLOW_CIDRS admits it", map[string]string{"RUNNER_HTTP_ALLOW_CIDRS": "127.0.0.0/8"}, ExitPass, "PASS recorded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServices(t)
			path, before := recordCase(t, t.TempDir(), s, `{"nodes": {"fixed": {"output": {"ok": true}}}}`, false)
			var out bytes.Buffer
			code := Run(context.Background(), &out, []string{path}, Options{Record: true, Getenv: func(k string) string { return tt.env[k] }})
			after, _ := os.ReadFile(path)
			if code != tt.code || !strings.Contains(out.String(), tt.want) || bytes.Equal(before, after) != (code != ExitPass) {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, out.String())
			}
		})
	}
}

func TestRecordFailureLeavesTheFile(t *testing.T) {
	tests := []struct {
		name string
		down func(*services)
		want string
	}{
		{"http service down", func(s *services) { s.http.Close() }, "GET " + "http://127.0.0.1:"},
		{"toolset down", func(s *services) { s.mcp.Close() }, "POST http://127.0.0.1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServices(t)
			path, before := recordCase(t, t.TempDir(), s, `{"nodes": {"fixed": {"output": {"ok": true}}}}`, true)
			tt.down(s)
			var out bytes.Buffer
			code := Run(context.Background(), &out, []string{path}, Options{Record: true, Getenv: noEnv})
			after, _ := os.ReadFile(path)
			if code == ExitPass || !bytes.Equal(before, after) {
				t.Fatalf("exit %d, file changed %v:\n%s", code, !bytes.Equal(before, after), out.String())
			}
			for _, w := range []string{"FAIL recorded", "--record: " + path + `: case "recorded": ` + tt.want, "no answer", "the file is left unchanged"} {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestModelReply(t *testing.T) {
	red := redact.New(openAIKey)
	names := map[string]string{"shop__get_order": "shop/get_order"}
	tests := []struct {
		name, provider string
		status         int
		body, want     string
	}{
		{"openai text", "openai", 200, `{"choices": [{"message": {"content": "hi ` + openAIKey + `"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}`,
			`{"text":"hi [REDACTED]","usage":{"inputTokens":3,"outputTokens":1}}`},
		{"openai tool call", "openai", 200, `{"choices": [{"message": {"content": null, "tool_calls": [{"function": {"name": "shop__get_order", "arguments": "{\"id\":42}"}}]}}]}`,
			`{"toolCalls":[{"name":"shop/get_order","arguments":{"id":42}}]}`},
		{"anthropic text and tool use", "anthropic", 200, `{"content": [{"type": "text", "text": "let me look"}, {"type": "tool_use", "name": "shop__get_order", "input": {"id": 42}}], "usage": {"input_tokens": 5, "output_tokens": 2}}`,
			`{"text":"let me look","toolCalls":[{"name":"shop/get_order","arguments":{"id":42}}],"usage":{"inputTokens":5,"outputTokens":2}}`},
		{"bedrock tool use, a name not listed", "bedrock", 200, `{"output": {"message": {"content": [{"toolUse": {"name": "crm__find", "input": {}}}]}}, "usage": {"inputTokens": 1, "outputTokens": 1}}`,
			`{"toolCalls":[{"name":"crm/find","arguments":{}}],"usage":{"inputTokens":1,"outputTokens":1}}`},
		{"openai error", "openai", 429, `{"error": {"message": "slow down, ` + openAIKey + `"}}`, `{"error":{"status":429,"message":"slow down, [REDACTED]"}}`},
		{"bedrock error", "bedrock", 503, `{"message": "busy"}`, `{"error":{"status":503,"message":"busy"}}`},
		{"anthropic error without a body", "anthropic", 500, ``, `{"error":{"status":500,"message":"Internal Server Error"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := &exchange{status: tt.status}
			ex.body.WriteString(tt.body)
			b, _ := json.Marshal(modelReply(tt.provider, ex, names, red))
			if string(b) != tt.want {
				t.Fatalf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}
