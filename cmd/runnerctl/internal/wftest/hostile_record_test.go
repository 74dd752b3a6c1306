package wftest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const neutral = "Zq9vLm2pXw7rTn4k"

func esc(s string) string { // every char as \uXXXX
	var b strings.Builder
	for _, c := range s {
		fmt.Fprintf(&b, `\u%04x`, c)
	}
	return b.String()
}
func rev(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
func swapcase(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z':
			b.WriteRune(c - 32)
		case c >= 'A' && c <= 'Z':
			b.WriteRune(c + 32)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// TestRecordHostileService: a service that echoes the secrets it was sent
// in escaped, split, header-name and argument forms gets none of them into
// the recorded case.
func TestRecordHostileService(t *testing.T) {
	s := startServices(t)
	sec := neutral
	s.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("X-"+got, "hdrname")
		w.Header().Set("X-Echo-Key", got)
		w.Header().Set("X-Echo-Ref", got)
		w.Header().Set("X-B64", base64.StdEncoding.EncodeToString([]byte(got)))
		w.Header().Set("Location", "https://x.example/?q="+url.QueryEscape(got)+"&p="+strings.ReplaceAll(got, "L", "%4C"))
		w.Header().Set("Content-Type", "application/json")
		body := `{"total":10,"full":"` + esc(got) + `","split":"` + got[:4] + esc(got[4:6]) + got[6:] + `","` + got + `":1,"swap":"` + swapcase(got) + `","rev":"` + rev(got) + `","pct":"` + strings.ReplaceAll(got, "L", "%4C") + `","b64esc":"` + esc(base64.StdEncoding.EncodeToString([]byte(got))) + `","hex":"` + fmt.Sprintf("%x", got) + `","b64rev":"` + base64.StdEncoding.EncodeToString([]byte(rev(got))) + `"}`
		w.Write([]byte(body))
	})
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "get_order", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t " + swapcase(mcpToken) + " " + rev(mcpToken)}},
				StructuredContent: json.RawMessage(`{"sc":"` + esc(mcpToken) + `","` + esc(mcpToken) + `":2}`)}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	s.mcp.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
	n := 0
	s.openai.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		msg := map[string]any{"role": "assistant", "content": "approve " + swapcase(key)}
		finish := "stop"
		if n == 1 {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "shop__get_order", "arguments": `{"id":42,"k":"` + esc(key) + `"}`}}}}
			finish = "tool_calls"
		}
		writeJSON(w, 200, map[string]any{"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-rec",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
	})
	dir := t.TempDir()
	path, _ := recordCase(t, dir, s, `{"nodes": {"fixed": {"output": {"ok": true}}}}`, true)
	req, _ := os.ReadFile(filepath.Join(dir, "order.json"))
	os.WriteFile(filepath.Join(dir, "order.json"), bytes.ReplaceAll(req, []byte(httpSecret), []byte(neutral)), 0o600)
	c, _ := os.ReadFile(path)
	c = bytes.Replace(c, []byte(`"calls": {"models": 3, "tools": 1, "http": 1}`), []byte(`"calls": {"http": 1}`), 1)
	os.WriteFile(path, c, 0o600)
	var out bytes.Buffer
	code := Run(context.Background(), &out, []string{path}, Options{Record: true, Getenv: noEnv})
	src, _ := os.ReadFile(path)
	t.Logf("exit %d\n%s\n%s", code, out.String(), src)
	// decode all JSON strings & check
	// What a service wrote with \u escapes, in a header's name or in a
	// tool call's arguments is redacted as it decodes. Forms the runner's
	// redactor does not know (the secret reversed, its letters' case
	// swapped, a letter percent-encoded that needs none) are out of its
	// design (protocol/redact) and not asserted here.
	var v any
	if err := json.Unmarshal(src, &v); err != nil {
		t.Fatal(err)
	}
	decoded, _ := json.Marshal(v)
	for _, sc := range []string{sec, mcpToken, openAIKey} {
		if strings.Contains(string(src), sc) || strings.Contains(string(decoded), sc) || strings.Contains(strings.ToLower(string(decoded)), strings.ToLower("x-"+sc)) {
			t.Errorf("the recorded file holds %.6s…", sc)
		}
	}
}
