//go:build !noopenai && !noanthropic && !nobedrock

package models

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

const bedrockReply = `{
 "output": {"message": {"role": "assistant", "content": [
  {"text": "Let me "}, {"text": "check."},
  {"toolUse": {"toolUseId": "tooluse_2", "name": "weather", "input": {"city": "Rome", "n": 12345678901234567890}}}]}},
 "stopReason": "tool_use",
 "usage": {"inputTokens": 42, "outputTokens": 7, "totalTokens": 49},
 "metrics": {"latencyMs": 12}}`

// testAccessKeyID is the access key of the static test credentials.
const testAccessKeyID = "AKIDRUNNERTEST"

// awsTestEnv gives the default AWS configuration static credentials and a
// region, and keeps it away from the machine's own files, instance
// metadata and settings.
func awsTestEnv(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":                testAccessKeyID,
		"AWS_SECRET_ACCESS_KEY":            "runner-test-secret",
		"AWS_SESSION_TOKEN":                "",
		"AWS_REGION":                       "us-east-1",
		"AWS_DEFAULT_REGION":               "",
		"AWS_PROFILE":                      "",
		"AWS_CONFIG_FILE":                  filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE":      filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":        "true",
		"AWS_ENDPOINT_URL":                 "",
		"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "",
		// Both must be ignored: the retryer is per call, and credentials
		// are the IAM role or the entry's own key.
		"AWS_MAX_ATTEMPTS":         "5",
		"AWS_BEARER_TOKEN_BEDROCK": "env-bearer-token",
	} {
		t.Setenv(k, v)
	}
}

func TestBedrockConverse(t *testing.T) {
	awsTestEnv(t)
	srv := newFakeServer(t, true, reply{body: bedrockReply})
	clients := &Clients{HTTPClient: srv.client(t), TrustedEndpoints: []string{srv.URL}}
	p, err := clients.Provider(context.Background(), protocol.Model{
		Role: "general", Provider: "bedrock", Model: "amazon.nova-test-v1:0",
		BaseURL: srv.URL, Headers: map[string]string{"X-Team": "blue"},
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
	if got.method != http.MethodPost || got.path != "/model/amazon.nova-test-v1%3A0/converse" {
		t.Errorf("request = %s %s, want POST /model/amazon.nova-test-v1%%3A0/converse", got.method, got.path)
	}
	auth := got.header.Get("Authorization")
	wantCred := "AWS4-HMAC-SHA256 Credential=" + testAccessKeyID + "/"
	if !strings.HasPrefix(auth, wantCred) || !strings.Contains(auth, "/us-east-1/bedrock/aws4_request") ||
		!strings.Contains(auth, "Signature=") {
		t.Errorf("Authorization = %q, want a SigV4 signature by %s for us-east-1/bedrock", auth, testAccessKeyID)
	}
	if !strings.Contains(auth, "x-team") {
		t.Errorf("Authorization = %q, want the extra header signed", auth)
	}
	if v := got.header.Get("X-Team"); v != "blue" {
		t.Errorf("X-Team = %q, want blue", v)
	}
	if got.header.Get("X-Amz-Date") == "" {
		t.Error("X-Amz-Date missing")
	}
	body := got.json(t)
	system := get(t, body, "system", 0, "text").(string)
	if !strings.HasPrefix(system, "You are terse.\n\n") || !strings.Contains(system, `"answer"`) {
		t.Errorf("system = %q, want the prompt then the JSON Schema instruction", system)
	}
	wantMessages := `[
	 {"role":"user","content":[{"text":"Weather in Paris?"}]},
	 {"role":"assistant","content":[{"text":"Checking."},
	   {"toolUse":{"toolUseId":"call_1","name":"weather","input":{"city":"Paris","days":2}}},
	   {"toolUse":{"toolUseId":"call_9","name":"weather","input":{"city":"Atlantis"}}}]},
	 {"role":"user","content":[
	   {"toolResult":{"toolUseId":"call_1","content":[{"text":"18C"}]}},
	   {"toolResult":{"toolUseId":"call_9","status":"error","content":[{"text":"unknown city"}]}},
	   {"text":"Thanks. And Rome?"}]}]`
	if !jsonEqual(t, body["messages"], wantMessages) {
		t.Errorf("messages = %v\nwant %s", body["messages"], wantMessages)
	}
	wantTools := `{"tools":[{"toolSpec":{"name":"weather","description":"Current weather",
	  "inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}}]}`
	if !jsonEqual(t, body["toolConfig"], wantTools) {
		t.Errorf("toolConfig = %v\nwant %s", body["toolConfig"], wantTools)
	}
	if !jsonEqual(t, body["inferenceConfig"], `{"maxTokens":50,"temperature":0.5}`) {
		t.Errorf("inferenceConfig = %v, want the request's maxTokens and the entry's temperature", body["inferenceConfig"])
	}

	want := &Response{
		Text:         "Let me check.",
		ToolCalls:    []ToolCall{{ID: "tooluse_2", Name: "weather", Arguments: json.RawMessage(`{"city":"Rome","n":12345678901234567890}`)}},
		FinishReason: "tool_use",
		Model:        "amazon.nova-test-v1:0",
		Usage:        Usage{InputTokens: 42, OutputTokens: 7},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Complete = %+v\nwant %+v", res, want)
		t.Logf("arguments: %s", res.ToolCalls)
	}
}

// TestBedrockAuth covers the region and the credentials a request is
// signed with.
func TestBedrockAuth(t *testing.T) {
	tests := []struct {
		name, region, apiKey string
		want                 string // prefix of Authorization
		scope                string
	}{
		{name: "iam role, default region", want: "AWS4-HMAC-SHA256 Credential=" + testAccessKeyID, scope: "/us-east-1/bedrock/"},
		{name: "iam role, entry region", region: "eu-west-3", want: "AWS4-HMAC-SHA256 Credential=" + testAccessKeyID, scope: "/eu-west-3/bedrock/"},
		{name: "bedrock api key", apiKey: "bedrock-api-key", want: "Bearer bedrock-api-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			awsTestEnv(t)
			srv := newFakeServer(t, true, reply{body: bedrockReply})
			p, err := (&Clients{HTTPClient: srv.client(t), TrustedEndpoints: []string{srv.URL}}).Provider(context.Background(), protocol.Model{
				Provider: "bedrock", Model: "m", BaseURL: srv.URL, Region: tt.region, APIKey: tt.apiKey,
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			got := srv.only(t)
			auth := got.header.Get("Authorization")
			if !strings.HasPrefix(auth, tt.want) || !strings.Contains(auth, tt.scope) {
				t.Errorf("Authorization = %q, want prefix %q and scope %q", auth, tt.want, tt.scope)
			}
			body := got.json(t)
			for _, field := range []string{"system", "toolConfig", "inferenceConfig"} {
				if v, ok := body[field]; ok {
					t.Errorf("%s = %v, want it absent", field, v)
				}
			}
		})
	}
}
