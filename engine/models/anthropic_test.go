//go:build !noopenai && !noanthropic && !nobedrock

package models

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

const anthropicReply = `{
 "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-2026",
 "content": [
  {"type": "text", "text": "Let me "},
  {"type": "text", "text": "check."},
  {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}}],
 "stop_reason": "tool_use", "stop_sequence": null,
 "usage": {"input_tokens": 42, "output_tokens": 7}}`

func TestAnthropicMessages(t *testing.T) {
	srv := newFakeServer(t, false, reply{body: anthropicReply})
	clients := &Clients{HTTPClient: srv.client(t)}
	p, err := clients.Provider(context.Background(), protocol.Model{
		Role: "general", Provider: "anthropic", Model: "claude-test",
		APIKey: "sk-ant-test", BaseURL: srv.URL, Headers: map[string]string{"X-Team": "blue"},
		Temperature: ptr(0.5), MaxTokens: ptr(100),
	})
	if err != nil {
		t.Fatal(err)
	}
	req := conversation
	req.MaxTokens = 50
	req.JSONSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)
	res, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}

	got := srv.only(t)
	if got.method != http.MethodPost || got.path != "/v1/messages" {
		t.Errorf("request = %s %s, want POST /v1/messages", got.method, got.path)
	}
	for name, want := range map[string]string{
		"Authorization": "Bearer sk-ant-test", // how this SDK sends an API key
		"X-Team":        "blue",
		"Content-Type":  "application/json",
	} {
		if v := got.header.Get(name); v != want {
			t.Errorf("header %s = %q, want %q", name, v, want)
		}
	}
	if got.header.Get("Anthropic-Version") == "" {
		t.Error("anthropic-version header missing")
	}
	body := got.json(t)
	if body["model"] != "claude-test" {
		t.Errorf("model = %v, want claude-test", body["model"])
	}
	if body["max_tokens"] != 50.0 {
		t.Errorf("max_tokens = %v, want the request's 50", body["max_tokens"])
	}
	if v, ok := body["temperature"]; ok {
		t.Errorf("temperature = %v, want none: the API version has no temperature", v)
	}
	system := get(t, body, "system", 0, "text").(string)
	if !strings.HasPrefix(system, "You are terse.\n\n") || !strings.Contains(system, `"answer"`) {
		t.Errorf("system = %q, want the prompt then the JSON Schema instruction", system)
	}
	// The tool results and the next user text share one user turn: the API
	// wants turns to alternate.
	wantMessages := `[
	 {"role":"user","content":[{"type":"text","text":"Weather in Paris?"}]},
	 {"role":"assistant","content":[{"type":"text","text":"Checking."},
	   {"type":"tool_use","id":"call_1","name":"weather","input":{"city":"Paris","days":2}},
	   {"type":"tool_use","id":"call_9","name":"weather","input":{"city":"Atlantis"}}]},
	 {"role":"user","content":[
	   {"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"18C"}]},
	   {"type":"tool_result","tool_use_id":"call_9","is_error":true,"content":[{"type":"text","text":"unknown city"}]},
	   {"type":"text","text":"Thanks. And Rome?"}]}]`
	if !jsonEqual(t, body["messages"], wantMessages) {
		t.Errorf("messages = %v\nwant %s", body["messages"], wantMessages)
	}
	wantTools := `[{"name":"weather","description":"Current weather",
	  "input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}]`
	if !jsonEqual(t, body["tools"], wantTools) {
		t.Errorf("tools = %v\nwant %s", body["tools"], wantTools)
	}

	want := &Response{
		Text:         "Let me check.",
		ToolCalls:    []ToolCall{{ID: "toolu_2", Name: "weather", Arguments: json.RawMessage(`{"city": "Rome"}`)}},
		FinishReason: "tool_use",
		Model:        "claude-test-2026",
		Usage:        Usage{InputTokens: 42, OutputTokens: 7},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Complete = %+v\nwant %+v", res, want)
	}
}

// TestAnthropicMaxTokens covers the required max_tokens: the request's,
// else the entry's, else the default.
func TestAnthropicMaxTokens(t *testing.T) {
	tests := []struct {
		name     string
		entryMax *int
		reqMax   int
		want     float64
	}{
		{"request", ptr(100), 7, 7},
		{"entry", ptr(100), 0, 100},
		{"default", nil, 0, DefaultAnthropicMaxTokens},
		// Large enough that the SDK would demand streaming without an
		// explicit request timeout.
		{"large", ptr(64000), 0, 64000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, false, reply{body: anthropicReply})
			p, err := (&Clients{HTTPClient: srv.client(t)}).Provider(context.Background(),
				protocol.Model{Provider: "anthropic", Model: "claude-test", BaseURL: srv.URL, MaxTokens: tt.entryMax})
			if err != nil {
				t.Fatal(err)
			}
			req := Request{MaxTokens: tt.reqMax, Messages: []Message{{Role: RoleUser, Content: "hi"}}}
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			body := srv.only(t).json(t)
			if body["max_tokens"] != tt.want {
				t.Errorf("max_tokens = %v, want %v", body["max_tokens"], tt.want)
			}
			if _, ok := body["system"]; ok {
				t.Error("system sent without a system prompt or schema")
			}
		})
	}
}

// TestAnthropicIgnoresEnvironment checks that the SDK's environment
// defaults are not used: the deployment's key must not reach an entry's
// server.
func TestAnthropicIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Env: leaked")
	srv := newFakeServer(t, false, reply{body: anthropicReply})
	p, err := (&Clients{HTTPClient: srv.client(t)}).Provider(context.Background(),
		protocol.Model{Provider: "anthropic", Model: "claude-test", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	h := srv.only(t).header
	for _, name := range []string{"Authorization", "X-Api-Key", "X-Env"} {
		if v := h.Get(name); v != "" {
			t.Errorf("header %s = %q, want none", name, v)
		}
	}
}
