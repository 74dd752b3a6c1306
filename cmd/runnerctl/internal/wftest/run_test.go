package wftest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/engine/models"
)

// runCases writes each case into a directory of its own and runs them.
func runCases(t *testing.T, o Options, cases ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	for i, c := range cases {
		name := filepath.Join(dir, "c"+string(rune('a'+i))+".test.json")
		if err := os.WriteFile(name, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	code := Run(context.Background(), &out, []string{dir}, o)
	return code, out.String()
}

const agentWorkflow = `{"nodes": [
  {"id": "agent", "type": "agent", "with": {"role": "general", "prompt": "refund order ${{ input.order }}?", "toolsets": ["shop"], "tools": ["shop/*"], "maxSteps": 4}},
  {"id": "lookup", "type": "http", "with": {"url": "https://api.example.com/orders/${{ input.order }}", "responseType": "json"}},
  {"id": "notify", "type": "set", "needs": ["agent"], "when": "${{ nodes.agent.output.text == 'deny' }}", "with": {"value": "denied"}}
 ],
 "output": {"decision": "${{ nodes.agent.output.text }}", "total": "${{ nodes.lookup.output.body.total }}"}}`

// refundCase is the example for provider, with the mocks and
// expectations given.
func refundCase(provider, mocks, expect string) string {
	return `{"name": "refund via ` + provider + `", "workflow": ` + agentWorkflow + `,
  "input": {"order": 42},
  "runtime": {"models": [{"role": "general", "provider": "` + provider + `", "model": "m-1", "region": "us-east-1"}],
              "toolsets": [{"name": "shop", "url": "https://mcp.example.com/mcp"}],
              "http": {"policy": {"allowHosts": ["api.example.com"]}}},
  "permissions": ["http:api.example.com", "tool:shop/*", "model:general"],
  "toolPolicies": [{"match": "shop/*", "decision": "allow"}],
  "mocks": ` + mocks + `, "expect": ` + expect + `}`
}

const refundMocks = `{
  "models": [{"role": "general", "replies": [
    {"toolCalls": [{"name": "shop/get_order", "arguments": {"id": 42}}]},
    {"text": "approve", "usage": {"inputTokens": 120, "outputTokens": 3}}]}],
  "tools": [{"toolset": "shop", "tool": "get_order", "arguments": {"id": 42}, "result": {"content": [{"type": "text", "text": "{\"total\": 10}"}]}}],
  "http": [{"method": "GET", "url": "https://api.example.com/orders/*", "status": 200, "body": {"total": 10}}]}`

func TestProvidersPass(t *testing.T) {
	for _, p := range providers() {
		t.Run(p, func(t *testing.T) {
			code, out := runCases(t, Options{}, refundCase(p, refundMocks, `{"status": "completed", "output": {"decision": "approve", "total": 10},
  "nodes": {"agent": {"status": "completed", "attempts": 1}, "notify": {"status": "skipped"}, "lookup": {"status": "completed"}},
  "decisions": [{"action": "tool.call", "resource": "shop/get_order", "decision": "allow"}],
  "calls": {"models": 2, "tools": 1, "http": 1}}`))
			if code != ExitPass || !regexp.MustCompile(`(?m)^PASS refund via `+p+` \(\d+ ms\)$`).MatchString(out) {
				t.Fatalf("exit %d:\n%s", code, out)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name, mocks, expect string
		want                []string
	}{
		{"wrong output", refundMocks, `{"output": {"decision": "deny"}, "nodes": {"notify": {"status": "completed"}}}`,
			[]string{`expect.output.decision: expected "deny", got "approve"`, `expect.output.total: expected nothing, got 10`, `expect.nodes.notify.status: expected "completed", got "skipped"`}},
		{"calls counted", refundMocks, `{"calls": {"models": 3, "tools": 0, "http": 1}}`,
			[]string{`expect.calls.models: expected 3, got 2`, `expect.calls.tools: expected 0, got 1`}},
		{"a 429 is retried as a real one", strings.Replace(refundMocks, `"replies": [`, `"replies": [{"error": {"status": 429, "message": "slow down"}},`, 1),
			`{"status": "completed", "calls": {"models": 99}}`, []string{`expect.calls.models: expected 99, got 3`}},
		{"model sequence runs out", strings.Replace(refundMocks, `{"text": "approve", "usage": {"inputTokens": 120, "outputTokens": 3}}`, `{"toolCalls": [{"name": "shop/get_order", "arguments": {"id": 42}}]}`, 1),
			`{}`, []string{`model call 3 of role "general" (` + providers()[0] + ` m-1): the mock has only 2 replies`}},
		{"tool arguments do not match", strings.Replace(refundMocks, `"arguments": {"id": 42}, "result"`, `"arguments": {"id": 7}, "result"`, 1),
			`{}`, []string{`tool call shop/get_order {"id":42}: no mock matches`}},
		{"http without a mock", strings.Replace(refundMocks, `https://api.example.com/orders/*`, `https://api.example.com/*/x`, 1),
			`{"nodes": {"lookup": {"status": "failed", "error": {"code": "HTTP_ERROR"}}}}`, []string{`http call GET https://api.example.com/orders/42: no mock matches`}},
		{"decisions in order", refundMocks, `{"decisions": [{"action": "tool.call", "decision": "deny"}]}`,
			[]string{`expect.decisions[0]: expected {"action":"tool.call","decision":"deny"}, got [{`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runCases(t, Options{}, refundCase(providers()[0], tt.mocks, tt.expect))
			if code != ExitFail || !strings.Contains(out, "FAIL refund via "+providers()[0]) {
				t.Fatalf("exit %d, want 1:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestPinnedNodes(t *testing.T) {
	// The agent and the http node are pinned: no model, tool or http call
	// is made, and their events still name their types.
	c := refundCase(providers()[0], `{"nodes": {"agent": {"output": {"text": "deny"}}, "lookup": {"error": {"code": "HTTP_ERROR", "message": "down"}}}}`,
		`{"status": "failed", "error": {"code": "HTTP_ERROR", "nodeId": "lookup"},
		  "nodes": {"agent": {"status": "completed", "output": {"text": "deny"}}, "lookup": {"status": "failed", "error": {"code": "HTTP_ERROR"}}},
		  "calls": {"models": 0, "tools": 0, "http": 0}}`)
	code, out := runCases(t, Options{}, c)
	if code != ExitPass {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestInvalidExits2(t *testing.T) {
	for name, c := range map[string]string{
		"inline":         `{"name": "bad", "workflow": {"nodes": [{"id": "a", "type": "nope"}]}}`,
		"by path":        `{"name": "bad", "workflow": "missing.json"}`,
		"not json":       `{"name": `,
		"unknown member": `{"name": "x", "workflow": {"nodes": []}, "expects": {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			code, out := runCases(t, Options{}, c)
			if code != ExitInvalid || !strings.Contains(out, "INVALID") {
				t.Fatalf("exit %d, want 2:\n%s", code, out)
			}
		})
	}
	// A workflow file's problems are placed in it, line and column.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "wf.json"), []byte("{\"nodes\": [\n  {\"id\": \"a\", \"type\": \"nope\"}\n]}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "wf.test.json"), []byte(`{"workflow": "wf.json"}`), 0o644)
	var out bytes.Buffer
	if code := Run(context.Background(), &out, []string{dir}, Options{}); code != ExitInvalid || !strings.Contains(out.String(), "wf.json:2:") {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
}

func TestRunJSONUpdateCover(t *testing.T) {
	c := refundCase("anthropic", refundMocks, `{"status": "failed"}`)
	code, out := runCases(t, Options{JSON: true, Cover: true}, c)
	var rep struct {
		Cases []struct {
			Status string
			Diffs  []diff `json:"differences"`
		}
		Failed int
		Cover  coverReport
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitFail || rep.Failed != 1 || len(rep.Cases[0].Diffs) != 1 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if w := rep.Cover.Workflows; len(w) != 1 || strings.Join(w[0].NeverRun, ",") != "notify" || strings.Join(w[0].WhenNeverTrue, ",") != "notify" {
		t.Fatalf("cover: %+v", rep.Cover)
	}

	// --update rewrites expect; the case then passes as is.
	dir := t.TempDir()
	path := filepath.Join(dir, "u.test.json")
	os.WriteFile(path, []byte(c), 0o644)
	var buf bytes.Buffer
	if code := Run(context.Background(), &buf, []string{dir}, Options{Update: true}); code != ExitPass {
		t.Fatalf("--update: exit %d\n%s", code, buf.String())
	}
	buf.Reset()
	if code := Run(context.Background(), &buf, []string{path}, Options{}); code != ExitPass {
		src, _ := os.ReadFile(path)
		t.Fatalf("after --update: exit %d\n%s\n%s", code, buf.String(), src)
	}
	src, _ := os.ReadFile(path)
	if !bytes.Contains(src, []byte(`"decision": "approve"`)) || !bytes.Contains(src, []byte(`"name": "refund via anthropic"`)) {
		t.Fatalf("updated file:\n%s", src)
	}

	// --run filters by name.
	buf.Reset()
	if code := Run(context.Background(), &buf, []string{dir}, Options{Run: regexp.MustCompile("^nothing$")}); code != ExitPass || !strings.Contains(buf.String(), "0 of 0") {
		t.Fatalf("--run: exit %d\n%s", code, buf.String())
	}
}

func TestMatchURL(t *testing.T) {
	for _, tt := range []struct {
		pattern, url string
		want         bool
	}{
		{"https://a.com/orders/*", "https://a.com/orders/42", true},
		{"https://a.com/orders/*", "https://a.com/orders/42/items", false},
		{"https://a.com/**", "https://a.com/orders/42/items", true},
		{"https://a.com/*/items", "https://a.com/orders/items", true},
		{"https://*.com/x", "https://evil.org/.com/x", false},
		{"https://a.com/x", "https://a.com/x?y=1", false},
		{"https://a.com/x*", "https://a.com/x?y=1", true},
		{"", "https://a.com/", false},
	} {
		if got := matchURL(tt.pattern, tt.url); got != tt.want {
			t.Errorf("matchURL(%q, %q) = %v", tt.pattern, tt.url, got)
		}
	}
}

func TestSubset(t *testing.T) {
	got := map[string]any{"id": 42.0, "opts": map[string]any{"a": 1.0, "b": 2.0}}
	for _, tt := range []struct {
		want string
		ok   bool
	}{
		{`{}`, true}, {`{"id": 42}`, true}, {`{"opts": {"b": 2}}`, true},
		{`{"id": 7}`, false}, {`{"missing": null}`, false}, {`{"opts": {"c": 1}}`, false},
	} {
		var w any
		json.Unmarshal([]byte(tt.want), &w)
		if subset(w, got) != tt.ok {
			t.Errorf("subset(%s) = %v", tt.want, !tt.ok)
		}
	}
}

// providers are the model providers compiled into this build.
func providers() []string { return models.Providers() }
