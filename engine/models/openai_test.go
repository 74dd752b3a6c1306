//go:build !noopenai && !noanthropic && !nobedrock

package models

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// conversation exercises every message kind: a system prompt, a user turn,
// an assistant turn with text and two tool calls, their results (one an
// error), and a user turn right after them.
var conversation = Request{
	System: "You are terse.",
	Messages: []Message{
		{Role: RoleUser, Content: "Weather in Paris?"},
		{Role: RoleAssistant, Content: "Checking.", ToolCalls: []ToolCall{
			{ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris","days":2}`)},
			{ID: "call_9", Name: "weather", Arguments: json.RawMessage(`{"city":"Atlantis"}`)},
		}},
		{Role: RoleTool, ToolCallID: "call_1", Content: "18C"},
		{Role: RoleTool, ToolCallID: "call_9", Content: "unknown city", IsError: true},
		{Role: RoleUser, Content: "Thanks. And Rome?"},
	},
	Tools: []Tool{{
		Name:        "weather",
		Description: "Current weather",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`),
	}},
}

const openAIReply = `{
 "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test-2026",
 "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null,
  "message": {"role": "assistant", "content": "Let me check.", "refusal": null,
   "tool_calls": [{"id": "call_2", "type": "function",
    "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}]}}],
 "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}}`

func TestOpenAIChatCompletion(t *testing.T) {
	srv := newFakeServer(t, false, reply{body: openAIReply})
	clients := &Clients{HTTPClient: srv.client(t)}
	p, err := clients.Provider(context.Background(), protocol.Model{
		Role: "general", Provider: "openai", Model: "gpt-test",
		APIKey: "sk-test", BaseURL: srv.URL + "/v1", Headers: map[string]string{"X-Team": "blue"},
		Temperature: ptr(0.5), MaxTokens: ptr(100),
	})
	if err != nil {
		t.Fatal(err)
	}
	req := conversation
	req.Temperature = ptr(0.1)
	req.MaxTokens = 50
	req.JSONSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)
	res, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}

	got := srv.only(t)
	if got.method != http.MethodPost || got.path != "/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /v1/chat/completions", got.method, got.path)
	}
	for name, want := range map[string]string{
		"Authorization": "Bearer sk-test",
		"X-Team":        "blue",
		"Content-Type":  "application/json",
	} {
		if v := got.header.Get(name); v != want {
			t.Errorf("header %s = %q, want %q", name, v, want)
		}
	}
	body := got.json(t)
	if body["model"] != "gpt-test" {
		t.Errorf("model = %v, want gpt-test", body["model"])
	}
	wantMessages := `[
	 {"role":"system","content":"You are terse."},
	 {"role":"user","content":"Weather in Paris?"},
	 {"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_1","type":"function",
	   "function":{"name":"weather","arguments":"{\"city\":\"Paris\",\"days\":2}"}},
	  {"id":"call_9","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Atlantis\"}"}}]},
	 {"role":"tool","content":"18C","tool_call_id":"call_1"},
	 {"role":"tool","content":"unknown city","tool_call_id":"call_9"},
	 {"role":"user","content":"Thanks. And Rome?"}]`
	if !jsonEqual(t, body["messages"], wantMessages) {
		t.Errorf("messages = %v\nwant %s", body["messages"], wantMessages)
	}
	wantTools := `[{"type":"function","function":{"name":"weather","description":"Current weather",
	  "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}]`
	if !jsonEqual(t, body["tools"], wantTools) {
		t.Errorf("tools = %v\nwant %s", body["tools"], wantTools)
	}
	if body["temperature"] != 0.1 {
		t.Errorf("temperature = %v, want the request's 0.1", body["temperature"])
	}
	if body["max_tokens"] != 50.0 {
		t.Errorf("max_tokens = %v, want the request's 50", body["max_tokens"])
	}
	wantFormat := `{"type":"json_schema","json_schema":{"name":"output",
	  "schema":{"type":"object","properties":{"answer":{"type":"string"}}}}}`
	if !jsonEqual(t, body["response_format"], wantFormat) {
		t.Errorf("response_format = %v\nwant %s", body["response_format"], wantFormat)
	}

	want := &Response{
		Text:         "Let me check.",
		ToolCalls:    []ToolCall{{ID: "call_2", Name: "weather", Arguments: json.RawMessage(`{"city":"Rome"}`)}},
		FinishReason: "tool_calls",
		Model:        "gpt-test-2026",
		Usage:        Usage{InputTokens: 42, OutputTokens: 7},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Complete = %+v\nwant %+v", res, want)
	}
}

// TestOpenAIParameters covers which value of temperature and max tokens is
// sent, and under which name.
func TestOpenAIParameters(t *testing.T) {
	tests := []struct {
		name            string
		baseURL         string // "" means OpenAI itself, reached through a redirect
		entryTemp       *float64
		entryMax        *int
		req             Request
		wantTemp        any // nil: absent
		wantMax         any
		maxField, other string
	}{
		{name: "request wins", baseURL: "/v1", entryTemp: ptr(0.5), entryMax: ptr(100),
			req:      Request{Temperature: ptr(0.0), MaxTokens: 7},
			wantTemp: 0.0, wantMax: 7.0, maxField: "max_tokens", other: "max_completion_tokens"},
		{name: "entry values", baseURL: "/v1", entryTemp: ptr(0.5), entryMax: ptr(100),
			wantTemp: 0.5, wantMax: 100.0, maxField: "max_tokens", other: "max_completion_tokens"},
		{name: "unset", baseURL: "/v1",
			wantTemp: nil, wantMax: nil, maxField: "max_tokens", other: "max_completion_tokens"},
		{name: "openai itself", baseURL: "", entryMax: ptr(100),
			wantMax: 100.0, maxField: "max_completion_tokens", other: "max_tokens"},
		{name: "openai by url", baseURL: "https://api.openai.com/v1", entryMax: ptr(100),
			wantMax: 100.0, maxField: "max_completion_tokens", other: "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, false, reply{body: openAIReply})
			hc := srv.client(t)
			m := protocol.Model{Provider: "openai", Model: "gpt-test", Temperature: tt.entryTemp, MaxTokens: tt.entryMax}
			switch {
			case tt.baseURL == "/v1":
				m.BaseURL = srv.URL + "/v1"
			default:
				m.BaseURL = tt.baseURL
				to, _ := url.Parse(srv.URL)
				hc = &http.Client{Transport: redirectTransport{to: to, next: hc.Transport}}
			}
			p, err := (&Clients{HTTPClient: hc}).Provider(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			req := tt.req
			req.Messages = []Message{{Role: RoleUser, Content: "hi"}}
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			body := srv.only(t).json(t)
			if got := body["temperature"]; got != tt.wantTemp {
				t.Errorf("temperature = %v, want %v", got, tt.wantTemp)
			}
			if got := body[tt.maxField]; got != tt.wantMax {
				t.Errorf("%s = %v, want %v", tt.maxField, got, tt.wantMax)
			}
			if got, ok := body[tt.other]; ok {
				t.Errorf("%s = %v, want it absent", tt.other, got)
			}
			if _, ok := body["response_format"]; ok {
				t.Error("response_format sent without a schema")
			}
		})
	}
}

// TestOpenAIIgnoresEnvironment checks that the SDK's environment defaults
// are not used: the deployment's key must not reach an entry's server.
func TestOpenAIIgnoresEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Env: leaked")
	srv := newFakeServer(t, false, reply{body: openAIReply})
	p, err := (&Clients{HTTPClient: srv.client(t)}).Provider(context.Background(),
		protocol.Model{Provider: "openai", Model: "local", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	h := srv.only(t).header
	for _, name := range []string{"Authorization", "OpenAI-Organization", "X-Env"} {
		if v := h.Get(name); v != "" {
			t.Errorf("header %s = %q, want none", name, v)
		}
	}
}
