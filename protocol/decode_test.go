package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// minimal is the smallest valid request body.
const minimal = `{"version":1,"workflow":{}}`

// withFields returns a valid minimal request with the given top-level
// members appended, e.g. withFields(`"trace":true`).
func withFields(members string) string {
	if members == "" {
		return minimal
	}
	return `{"version":1,"workflow":{},` + members + `}`
}

func ptr[T any](v T) *T { return &v }

func TestDecodeRequestValid(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *ExecutionRequest
	}{
		{
			name: "minimal",
			body: minimal,
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`)},
		},
		{
			name: "version 1.0 is the number 1",
			body: `{"version":1.0,"workflow":{}}`,
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`)},
		},
		{
			name: "workflow kept raw, byte for byte",
			body: `{"version":1,"workflow":{ "nodes" : [ {"id":"a"} ] }}`,
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{ "nodes" : [ {"id":"a"} ] }`)},
		},
		{
			name: "unknown top-level fields ignored",
			body: `{"future":{"x":[1,2]},"version":1,"extra":"y","workflow":{},"z":null}`,
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`)},
		},
		{
			name: "unknown nested fields ignored",
			body: withFields(`"runtime":{"gpu":true,"models":[{"role":"general","future":1}],"http":{"proxy":"x"}},"authorization":{"tokens":[]}`),
			want: &ExecutionRequest{
				Version:  1,
				Workflow: json.RawMessage(`{}`),
				Runtime:  Runtime{Models: []Model{{Role: "general"}}},
			},
		},
		{
			name: "null optional fields are absent",
			body: withFields(`"input":null,"trace":null,"runtime":null,"permissions":null,"authorization":null,"toolPolicies":null,"consentAvailable":null`),
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`)},
		},
		{
			name: "input object kept raw",
			body: withFields(`"input":{ "a" : [1, 2] }`),
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`), Input: json.RawMessage(`{ "a" : [1, 2] }`)},
		},
		{
			name: "input array",
			body: withFields(`"input":[1,"two"]`),
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`), Input: json.RawMessage(`[1,"two"]`)},
		},
		{
			name: "input string",
			body: withFields(`"input":"hello"`),
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`), Input: json.RawMessage(`"hello"`)},
		},
		{
			name: "input number",
			body: withFields(`"input":-1.5e3`),
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`), Input: json.RawMessage(`-1.5e3`)},
		},
		{
			name: "input false",
			body: withFields(`"input":false`),
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`), Input: json.RawMessage(`false`)},
		},
		{
			name: "permissions absent is nil",
			body: minimal,
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`), Permissions: nil},
		},
		{
			name: "permissions empty is non-nil",
			body: withFields(`"permissions":[]`),
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`), Permissions: []string{}},
		},
		{
			name: "permissions null is nil",
			body: withFields(`"permissions":null`),
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`), Permissions: nil},
		},
		{
			name: "permissions listed",
			body: withFields(`"permissions":["tool:github/*","http:api.example.com"]`),
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`), Permissions: []string{"tool:github/*", "http:api.example.com"}},
		},
		{
			name: "runtime models empty is non-nil",
			body: withFields(`"runtime":{"models":[]}`),
			want: &ExecutionRequest{Version: 1, Workflow: json.RawMessage(`{}`), Runtime: Runtime{Models: []Model{}}},
		},
		{
			name: "secrets in string and object form",
			body: withFields(`"runtime":{"http":{"secrets":{"plain":"s3cr3t","scoped":{"value":"t0k3n","hosts":["api.example.com"]}}}}`),
			want: &ExecutionRequest{
				Version:  1,
				Workflow: json.RawMessage(`{}`),
				Runtime: Runtime{HTTP: HTTPRuntime{Secrets: map[string]Secret{
					"plain":  {Value: "s3cr3t"},
					"scoped": {Value: "t0k3n", Hosts: []string{"api.example.com"}},
				}}},
			},
		},
		{
			name: "secrets empty object is non-nil",
			body: withFields(`"runtime":{"http":{"secrets":{}}}`),
			want: &ExecutionRequest{
				Version:  1,
				Workflow: json.RawMessage(`{}`),
				Runtime:  Runtime{HTTP: HTTPRuntime{Secrets: map[string]Secret{}}},
			},
		},
		{
			name: "grants in string and object form",
			body: withFields(`"authorization":{"grants":["tool:github/*",{"action":"http.request","resource":"api.example.com"},"model:general","workflow:child"]}`),
			want: &ExecutionRequest{
				Version:  1,
				Workflow: json.RawMessage(`{}`),
				Authorization: Authorization{Grants: []Grant{
					{Action: ActionToolCall, Resource: "github/*"},
					{Action: ActionHTTPRequest, Resource: "api.example.com"},
					{Action: ActionModelInvoke, Resource: "general"},
					{Action: ActionWorkflowRun, Resource: "child"},
				}},
			},
		},
		{
			name: "every field",
			body: `{
				"version": 1,
				"workflow": {"nodes":[]},
				"input": {"q":"x"},
				"trace": true,
				"runtime": {
					"models": [
						{"role":"general","provider":"openai","model":"gpt","apiKey":"k1","baseUrl":"https://llm","headers":{"X-A":"b"},"temperature":0.5,"maxTokens":100},
						{"role":"fast","provider":"bedrock","model":"m","region":"us-east-1"}
					],
					"toolsets": [{"name":"github","url":"https://mcp","transport":"streamable-http","headers":{"Authorization":"Bearer t"},"timeoutMs":5000}],
					"workflows": [{"id":"child"}],
					"http": {
						"policy": {"allowHosts":["a.com"],"denyHosts":["b.com"],"methods":["GET"],"allowPrivateNetwork":true,"maxResponseBytes":1024,"timeoutMs":3000,"maxRequests":7,"maxRedirects":0},
						"secrets": {"s":"v"}
					}
				},
				"permissions": ["tool:github/*"],
				"authorization": {"grants": ["http:a.com"]},
				"toolPolicies": [{"match":"github/delete_*","decision":"deny","reason":"no"}],
				"consentAvailable": true
			}`,
			want: &ExecutionRequest{
				Version:  1,
				Workflow: json.RawMessage(`{"nodes":[]}`),
				Input:    json.RawMessage(`{"q":"x"}`),
				Trace:    true,
				Runtime: Runtime{
					Models: []Model{
						{Role: "general", Provider: "openai", Model: "gpt", APIKey: "k1", BaseURL: "https://llm", Headers: map[string]string{"X-A": "b"}, Temperature: ptr(0.5), MaxTokens: ptr(100)},
						{Role: "fast", Provider: "bedrock", Model: "m", Region: "us-east-1"},
					},
					Toolsets:  []Toolset{{Name: "github", URL: "https://mcp", Transport: "streamable-http", Headers: map[string]string{"Authorization": "Bearer t"}, TimeoutMs: 5000}},
					Workflows: []json.RawMessage{json.RawMessage(`{"id":"child"}`)},
					HTTP: HTTPRuntime{
						Policy: HTTPPolicy{
							AllowHosts: []string{"a.com"}, DenyHosts: []string{"b.com"}, Methods: []string{"GET"},
							AllowPrivateNetwork: true, MaxResponseBytes: 1024, TimeoutMs: 3000, MaxRequests: 7, MaxRedirects: ptr(0),
						},
						Secrets: map[string]Secret{"s": {Value: "v"}},
					},
				},
				Permissions:      []string{"tool:github/*"},
				Authorization:    Authorization{Grants: []Grant{{Action: ActionHTTPRequest, Resource: "a.com"}}},
				ToolPolicies:     []ToolPolicy{{Match: "github/delete_*", Decision: "deny", Reason: "no"}},
				ConsentAvailable: true,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodeRequest: unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				// The JSON dump omits empty slices; say which are nil.
				t.Errorf("DecodeRequest mismatch\n got: %s (permissions nil: %v, models nil: %v)\nwant: %s (permissions nil: %v, models nil: %v)",
					dump(got), got.Permissions == nil, got.Runtime.Models == nil,
					dump(tt.want), tt.want.Permissions == nil, tt.want.Runtime.Models == nil)
			}
		})
	}
}

// TestDecodeRequestPermissionsNil pins the one distinction DeepEqual output
// makes hard to read: absent or null permissions mean "no restriction", an
// empty list means "everything denied".
func TestDecodeRequestPermissionsNil(t *testing.T) {
	tests := []struct {
		body    string
		wantNil bool
	}{
		{minimal, true},
		{withFields(`"permissions":null`), true},
		{withFields(`"permissions":[]`), false},
		{withFields(`"permissions": [ ]`), false},
	}
	for _, tt := range tests {
		req, err := DecodeRequest([]byte(tt.body))
		if err != nil {
			t.Fatalf("DecodeRequest(%s): %v", tt.body, err)
		}
		if gotNil := req.Permissions == nil; gotNil != tt.wantNil {
			t.Errorf("DecodeRequest(%s): Permissions == nil is %v, want %v", tt.body, gotNil, tt.wantNil)
		}
		if len(req.Permissions) != 0 {
			t.Errorf("DecodeRequest(%s): Permissions = %q, want none", tt.body, req.Permissions)
		}
	}
}

func TestDecodeRequestInvalid(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []Detail
	}{
		// The body itself.
		{"empty body", ``, []Detail{{"", "request body must be a JSON object (malformed JSON at line 1, column 1 (byte 0): unexpected end of JSON input)"}}},
		{"malformed", `{"version":1,`, []Detail{{"", "request body must be a JSON object (malformed JSON at line 1, column 14 (byte 13): unexpected end of JSON input)"}}},
		{"trailing garbage", `{"version":1,"workflow":{}} x`, []Detail{{"", "request body must be a JSON object (malformed JSON at line 1, column 29 (byte 28): invalid character 'x' after top-level value)"}}},
		{"body null", `null`, []Detail{{"", "request body must be a JSON object"}}},
		{"body array", `[{"version":1}]`, []Detail{{"", "request body must be a JSON object, got array"}}},
		{"body string", `"hi"`, []Detail{{"", "request body must be a JSON object, got string"}}},
		{"body number", `1`, []Detail{{"", "request body must be a JSON object, got number"}}},

		// version.
		{"version missing", `{"workflow":{}}`, []Detail{{"version", "required: the protocol version, 1"}}},
		{"version null", `{"version":null,"workflow":{}}`, []Detail{{"version", "required: the protocol version, 1"}}},
		{"version string", `{"version":"1","workflow":{}}`, []Detail{{"version", "must be the number 1, got a string"}}},
		{"version boolean", `{"version":true,"workflow":{}}`, []Detail{{"version", "must be the number 1, got a boolean"}}},
		{"version object", `{"version":{"major":1},"workflow":{}}`, []Detail{{"version", "must be the number 1, got an object"}}},
		{"version 2", `{"version":2,"workflow":{}}`, []Detail{{"version", "unsupported protocol version 2: this runner speaks version 1"}}},
		{"version 0", `{"version":0,"workflow":{}}`, []Detail{{"version", "unsupported protocol version 0: this runner speaks version 1"}}},
		{"version 1.5", `{"version":1.5,"workflow":{}}`, []Detail{{"version", "unsupported protocol version 1.5: this runner speaks version 1"}}},

		// workflow.
		{"workflow missing", `{"version":1}`, []Detail{{"workflow", "required: the workflow document, an object"}}},
		{"workflow null", `{"version":1,"workflow":null}`, []Detail{{"workflow", "required: the workflow document, an object"}}},
		{"workflow array", `{"version":1,"workflow":[]}`, []Detail{{"workflow", "must be an object, got an array"}}},
		{"workflow string", `{"version":1,"workflow":"{}"}`, []Detail{{"workflow", "must be an object, got a string"}}},
		{"workflow number", `{"version":1,"workflow":7}`, []Detail{{"workflow", "must be an object, got a number"}}},

		// Scalars and containers of the wrong type.
		{"trace string", withFields(`"trace":"yes"`), []Detail{{"trace", "must be a boolean, got string"}}},
		{"consentAvailable number", withFields(`"consentAvailable":1`), []Detail{{"consentAvailable", "must be a boolean, got number"}}},
		{"permissions object", withFields(`"permissions":{}`), []Detail{{"permissions", "must be an array, got an object"}}},
		{"permissions string", withFields(`"permissions":"tool:*"`), []Detail{{"permissions", "must be an array, got a string"}}},
		{"toolPolicies object", withFields(`"toolPolicies":{"match":"a/*"}`), []Detail{{"toolPolicies", "must be an array, got an object"}}},
		{"authorization array", withFields(`"authorization":[]`), []Detail{{"authorization", "must be an object, got an array"}}},
		{"authorization.grants object", withFields(`"authorization":{"grants":{}}`), []Detail{{"authorization.grants", "must be an array, got an object"}}},
		{"runtime array", withFields(`"runtime":[]`), []Detail{{"runtime", "must be an object, got an array"}}},
		{"runtime.models object", withFields(`"runtime":{"models":{"general":{}}}`), []Detail{{"runtime.models", "must be an array, got an object"}}},
		{"runtime.toolsets string", withFields(`"runtime":{"toolsets":"github"}`), []Detail{{"runtime.toolsets", "must be an array, got a string"}}},
		{"runtime.workflows object", withFields(`"runtime":{"workflows":{}}`), []Detail{{"runtime.workflows", "must be an array, got an object"}}},
		{"runtime.http boolean", withFields(`"runtime":{"http":true}`), []Detail{{"runtime.http", "must be an object, got a boolean"}}},
		{"runtime.http.policy array", withFields(`"runtime":{"http":{"policy":[]}}`), []Detail{{"runtime.http.policy", "must be an object, got array"}}},
		{"runtime.http.secrets array", withFields(`"runtime":{"http":{"secrets":[]}}`), []Detail{{"runtime.http.secrets", "must be an object, got an array"}}},

		// Element and field type errors, each with the exact path at fault.
		{"permissions[1]", withFields(`"permissions":["tool:a/*",5]`), []Detail{{"permissions[1]", "must be a string, got number"}}},
		{"runtime.models[1] not an object", withFields(`"runtime":{"models":[{},"general"]}`), []Detail{{"runtime.models[1]", "must be an object, got string"}}},
		{"runtime.models[1].maxTokens", withFields(`"runtime":{"models":[{"role":"general"},{"role":"fast","maxTokens":"many"}]}`), []Detail{{"runtime.models[1].maxTokens", "must be a number, got string"}}},
		{"runtime.models[0].maxTokens fraction", withFields(`"runtime":{"models":[{"maxTokens":1.5}]}`), []Detail{{"runtime.models[0].maxTokens", "must be a number, got number 1.5"}}},
		{"runtime.models[0].temperature", withFields(`"runtime":{"models":[{"temperature":"hot"}]}`), []Detail{{"runtime.models[0].temperature", "must be a number, got string"}}},
		{"runtime.toolsets[0].headers not an object", withFields(`"runtime":{"toolsets":[{"name":"gh","headers":["a"]}]}`), []Detail{{"runtime.toolsets[0].headers", "must be an object, got array"}}},
		{"runtime.toolsets[0].headers value", withFields(`"runtime":{"toolsets":[{"name":"gh","headers":{"X-N":1}}]}`), []Detail{{"runtime.toolsets[0].headers", "must be a string, got number"}}},
		{"runtime.http.policy.timeoutMs", withFields(`"runtime":{"http":{"policy":{"timeoutMs":"5s"}}}`), []Detail{{"runtime.http.policy.timeoutMs", "must be a number, got string"}}},
		{"runtime.http.policy.allowHosts", withFields(`"runtime":{"http":{"policy":{"allowHosts":"a.com"}}}`), []Detail{{"runtime.http.policy.allowHosts", "must be an array, got string"}}},
		{"runtime.http.secrets.name", withFields(`"runtime":{"http":{"secrets":{"name":42}}}`), []Detail{{"runtime.http.secrets.name", "must be a string or an object {value, hosts}"}}},
		{"runtime.http.secrets.name hosts", withFields(`"runtime":{"http":{"secrets":{"name":{"value":"v","hosts":"a.com"}}}}`), []Detail{{"runtime.http.secrets.name", "must be a string or an object {value, hosts}"}}},
		{"authorization.grants[0] unknown kind", withFields(`"authorization":{"grants":["disk:/etc"]}`), []Detail{{"authorization.grants[0]", `"disk:/etc": unknown kind "disk" (want model, tool, http or workflow)`}}},
		{"authorization.grants[0] no glob", withFields(`"authorization":{"grants":["tool:"]}`), []Detail{{"authorization.grants[0]", `"tool:" is not of the form kind:glob`}}},
		{"authorization.grants[0] number", withFields(`"authorization":{"grants":[7]}`), []Detail{{"authorization.grants[0]", `must be a string "kind:glob" or an object {action, resource}`}}},
		{"authorization.grants[1] bad object", withFields(`"authorization":{"grants":["tool:a/*",{"action":["tool.call"]}]}`), []Detail{{"authorization.grants[1]", `must be a string "kind:glob" or an object {action, resource}`}}},
		{"toolPolicies[0].decision", withFields(`"toolPolicies":[{"match":"gh/*","decision":true}]`), []Detail{{"toolPolicies[0].decision", "must be a string, got bool"}}},
		{"runtime.workflows[1] not an object", withFields(`"runtime":{"workflows":[{"id":"a"},"b"]}`), []Detail{{"runtime.workflows[1]", "must be a workflow document, an object, got a string"}}},
		{"runtime.workflows[0] null", withFields(`"runtime":{"workflows":[null]}`), []Detail{{"runtime.workflows[0]", "must be a workflow document, an object, got null"}}},

		// Every problem at once, in a stable order.
		{
			name: "multiple problems reported together",
			body: `{
				"version": 2,
				"workflow": [],
				"trace": 1,
				"permissions": ["tool:*", false],
				"toolPolicies": [{"decision":0}],
				"authorization": {"grants": ["x"]},
				"runtime": {
					"models": [{"maxTokens":"x"}],
					"toolsets": [{"timeoutMs":"x"}],
					"workflows": [1],
					"http": {"policy": {"timeoutMs":"x"}, "secrets": {"z":1, "a":[]}}
				}
			}`,
			want: []Detail{
				{"version", "unsupported protocol version 2: this runner speaks version 1"},
				{"workflow", "must be an object, got an array"},
				{"trace", "must be a boolean, got number"},
				{"permissions[1]", "must be a string, got bool"},
				{"toolPolicies[0].decision", "must be a string, got number"},
				{"authorization.grants[0]", `"x" is not of the form kind:glob`},
				{"runtime.models[0].maxTokens", "must be a number, got string"},
				{"runtime.toolsets[0].timeoutMs", "must be a number, got string"},
				{"runtime.workflows[0]", "must be a workflow document, an object, got a number"},
				{"runtime.http.policy.timeoutMs", "must be a number, got string"},
				{"runtime.http.secrets.a", "must be a string or an object {value, hosts}"},
				{"runtime.http.secrets.z", "must be a string or an object {value, hosts}"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := decodeInvalid(t, tt.body)
			if !reflect.DeepEqual(inv.Details, tt.want) {
				t.Errorf("Details mismatch\n got: %s\nwant: %s", dump(inv.Details), dump(tt.want))
			}
		})
	}
}

// decodeInvalid decodes body, which must be rejected, and returns the
// *Invalid describing why.
func decodeInvalid(t *testing.T, body string) *Invalid {
	t.Helper()
	req, err := DecodeRequest([]byte(body))
	if err == nil {
		t.Fatalf("DecodeRequest(%s) = %s, want an error", body, dump(req))
	}
	if req != nil {
		t.Errorf("DecodeRequest(%s) returned both a request and an error", body)
	}
	var inv *Invalid
	if !errors.As(err, &inv) {
		t.Fatalf("DecodeRequest error is %T (%v), want *Invalid", err, err)
	}
	if len(inv.Details) == 0 {
		t.Fatalf("DecodeRequest returned an *Invalid without details")
	}
	return inv
}

// TestDecodeRequestNeverRevealsSecrets feeds secrets and API keys of the wrong
// type or shape and checks that no part of the rejection carries them.
func TestDecodeRequestNeverRevealsSecrets(t *testing.T) {
	const secret = "sk-live-7hX2Qm9TOPSECRET"
	const digits = "86753094217"
	tests := []struct {
		name     string
		body     string
		wantPath string // "" when only a body-level detail is expected
	}{
		{"secret array", withFields(`"runtime":{"http":{"secrets":{"tok":["` + secret + `"]}}}`), "runtime.http.secrets.tok"},
		{"secret number", withFields(`"runtime":{"http":{"secrets":{"tok":` + digits + `}}}`), "runtime.http.secrets.tok"},
		{"secret boolean", withFields(`"runtime":{"http":{"secrets":{"tok":true}}}`), "runtime.http.secrets.tok"},
		{"secret value array", withFields(`"runtime":{"http":{"secrets":{"tok":{"value":["` + secret + `"]}}}}`), "runtime.http.secrets.tok"},
		{"secret value number", withFields(`"runtime":{"http":{"secrets":{"tok":{"value":` + digits + `}}}}`), "runtime.http.secrets.tok"},
		{"secret hosts string", withFields(`"runtime":{"http":{"secrets":{"tok":{"value":"` + secret + `","hosts":"api.example.com"}}}}`), "runtime.http.secrets.tok"},
		{"secret hosts numbers", withFields(`"runtime":{"http":{"secrets":{"tok":{"value":"` + secret + `","hosts":[1]}}}}`), "runtime.http.secrets.tok"},
		{"secrets as array", withFields(`"runtime":{"http":{"secrets":["` + secret + `"]}}`), "runtime.http.secrets"},
		{"secrets as string", withFields(`"runtime":{"http":{"secrets":"` + secret + `"}}`), "runtime.http.secrets"},
		{"apiKey object", withFields(`"runtime":{"models":[{"role":"general","apiKey":{"key":"` + secret + `"}}]}`), "runtime.models[0].apiKey"},
		{"apiKey array", withFields(`"runtime":{"models":[{"role":"general","apiKey":["` + secret + `"]}]}`), "runtime.models[0].apiKey"},
		{"apiKey number", withFields(`"runtime":{"models":[{"role":"general","apiKey":` + digits + `}]}`), "runtime.models[0].apiKey"},
		{"apiKey then bad maxTokens", withFields(`"runtime":{"models":[{"apiKey":"` + secret + `","maxTokens":"` + secret + `"}]}`), "runtime.models[0].maxTokens"},
		{"model is the key", withFields(`"runtime":{"models":["` + secret + `"]}`), "runtime.models[0]"},
		{"model header array", withFields(`"runtime":{"models":[{"headers":{"Authorization":["Bearer ` + secret + `"]}}]}`), "runtime.models[0].headers"},
		{"model headers string", withFields(`"runtime":{"models":[{"headers":"Authorization: Bearer ` + secret + `"}]}`), "runtime.models[0].headers"},
		{"toolset header number", withFields(`"runtime":{"toolsets":[{"name":"gh","headers":{"Authorization":` + digits + `}}]}`), "runtime.toolsets[0].headers"},
		{"toolset header object", withFields(`"runtime":{"toolsets":[{"name":"gh","headers":{"Authorization":{"bearer":"` + secret + `"}}}]}`), "runtime.toolsets[0].headers"},
		{"toolset headers string", withFields(`"runtime":{"toolsets":[{"name":"gh","headers":"Bearer ` + secret + `"}]}`), "runtime.toolsets[0].headers"},
		{"secret as workflow", `{"version":1,"workflow":"` + secret + `"}`, "workflow"},
		{"secret as version", `{"version":"` + secret + `","workflow":{}}`, "version"},
		{"secret as runtime", withFields(`"runtime":"` + secret + `"`), "runtime"},
		{"malformed after secret", withFields(`"runtime":{"models":[{"apiKey":"` + secret + `"x}]}`), ""},
		{"unterminated secret", withFields(`"runtime":{"models":[{"apiKey":"` + secret), ""},
		{"body is the secret", `"` + secret + `"`, ""},
		{"body is a numeric secret", digits, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := decodeInvalid(t, tt.body)
			found := false
			for _, d := range inv.Details {
				found = found || d.Path == tt.wantPath
			}
			if !found {
				t.Errorf("no detail at path %q: %s", tt.wantPath, dump(inv.Details))
			}
			body, err := json.Marshal(inv.Response())
			if err != nil {
				t.Fatal(err)
			}
			for _, where := range []struct{ what, text string }{
				{"err.Error()", inv.Error()},
				{"Details", fmt.Sprintf("%#v", inv.Details)},
				{"response body", string(body)},
			} {
				for _, s := range []string{secret, "TOPSECRET", digits} {
					if strings.Contains(where.text, s) {
						t.Errorf("%s reveals %q: %s", where.what, s, where.text)
					}
				}
			}
		})
	}
}

func TestSecretStringRedacted(t *testing.T) {
	req, err := DecodeRequest([]byte(withFields(`"runtime":{"http":{"secrets":{"a":"s3cr3t-a","b":{"value":"s3cr3t-b","hosts":["h"]}}}}`)))
	if err != nil {
		t.Fatal(err)
	}
	secrets := req.Runtime.HTTP.Secrets
	if got := secrets["b"].String(); got != "[REDACTED]" {
		t.Errorf("Secret.String() = %q, want [REDACTED]", got)
	}
	for _, verb := range []string{"%v", "%+v", "%s"} {
		if got := fmt.Sprintf(verb, secrets); strings.Contains(got, "s3cr3t") {
			t.Errorf("Sprintf(%q, secrets) reveals a value: %s", verb, got)
		}
	}
}

// dump renders v for failure messages.
func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}
