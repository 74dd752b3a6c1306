package protocol

import (
	"encoding/json"
	"testing"
	"time"
)

// marshal encodes v as it goes on the wire.
func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%T): %v", v, err)
	}
	return string(b)
}

func TestInvalidError(t *testing.T) {
	tests := []struct {
		name string
		inv  *Invalid
		want string
	}{
		{"no details", &Invalid{}, "invalid execution"},
		{"one detail", Invalidf("version", "unsupported protocol version %d", 2), "version: unsupported protocol version 2"},
		{"one detail without path", Invalidf("", "request body must be a JSON object"), "request body must be a JSON object"},
		{"two details", &Invalid{Details: []Detail{
			{"workflow", "must be an object, got an array"},
			{"trace", "must be a boolean, got string"},
		}}, "workflow: must be an object, got an array (and 1 more)"},
		{"many details", &Invalid{Details: []Detail{
			{"version", "required: the protocol version, 1"},
			{"workflow", "required: the workflow document, an object"},
			{"permissions[1]", "must be a string, got number"},
			{"runtime.http.secrets.a", "must be a string or an object {value, hosts}"},
		}}, "version: required: the protocol version, 1 (and 3 more)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.inv.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInvalidAddAndErr(t *testing.T) {
	var nilInv *Invalid
	if err := nilInv.Err(); err != nil {
		t.Errorf("(*Invalid)(nil).Err() = %v, want nil", err)
	}
	inv := &Invalid{}
	if err := inv.Err(); err != nil {
		t.Errorf("empty Invalid.Err() = %v, want nil", err)
	}
	inv.Add("toolPolicies[%d]", "ignored verb in path")
	inv.Add("runtime.models[0].role", "role %q is %s", "fast", "unknown")
	want := []Detail{
		{"toolPolicies[%d]", "ignored verb in path"},
		{"runtime.models[0].role", `role "fast" is unknown`},
	}
	if len(inv.Details) != len(want) {
		t.Fatalf("Details = %v, want %v", inv.Details, want)
	}
	for i := range want {
		if inv.Details[i] != want[i] {
			t.Errorf("Details[%d] = %v, want %v", i, inv.Details[i], want[i])
		}
	}
	if err := inv.Err(); err != inv {
		t.Errorf("Err() = %v, want the *Invalid itself", err)
	}
}

func TestInvalidResponseBytes(t *testing.T) {
	tests := []struct {
		name string
		inv  *Invalid
		want string
	}{
		{
			name: "no details",
			inv:  &Invalid{},
			want: `{"version":1,"error":{"code":"INVALID_EXECUTION","message":"invalid execution"}}`,
		},
		{
			name: "one detail",
			inv:  Invalidf("workflow.nodes[2].needs[0]", "unknown node %q", "b"),
			want: `{"version":1,"error":{"code":"INVALID_EXECUTION","message":"workflow.nodes[2].needs[0]: unknown node \"b\"","details":[{"path":"workflow.nodes[2].needs[0]","message":"unknown node \"b\""}]}}`,
		},
		{
			name: "body-level detail keeps an empty path",
			inv:  Invalidf("", "request body must be a JSON object"),
			want: `{"version":1,"error":{"code":"INVALID_EXECUTION","message":"request body must be a JSON object","details":[{"path":"","message":"request body must be a JSON object"}]}}`,
		},
		{
			name: "many details",
			inv: &Invalid{Details: []Detail{
				{"version", "unsupported protocol version 2: this runner speaks version 1"},
				{"workflow", "must be an object, got an array"},
			}},
			want: `{"version":1,"error":{"code":"INVALID_EXECUTION","message":"version: unsupported protocol version 2: this runner speaks version 1 (and 1 more)","details":[{"path":"version","message":"unsupported protocol version 2: this runner speaks version 1"},{"path":"workflow","message":"must be an object, got an array"}]}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := marshal(t, tt.inv.Response()); got != tt.want {
				t.Errorf("Response() body mismatch\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

// TestDecodeRequestResponseBytes pins the 400 body of a rejected request end
// to end, from request bytes to response bytes.
func TestDecodeRequestResponseBytes(t *testing.T) {
	inv := decodeInvalid(t, `{"version":2,"workflow":[],"permissions":["tool:*",1]}`)
	want := `{"version":1,"error":{"code":"INVALID_EXECUTION","message":"version: unsupported protocol version 2: this runner speaks version 1 (and 2 more)","details":[` +
		`{"path":"version","message":"unsupported protocol version 2: this runner speaks version 1"},` +
		`{"path":"workflow","message":"must be an object, got an array"},` +
		`{"path":"permissions[1]","message":"must be a string, got number"}]}}`
	if got := marshal(t, inv.Response()); got != want {
		t.Errorf("body mismatch\n got: %s\nwant: %s", got, want)
	}
}

func TestNewErrorResponseBytes(t *testing.T) {
	tests := []struct {
		code    Code
		message string
		want    string
	}{
		{CodeUnauthorized, "missing bearer token", `{"version":1,"error":{"code":"UNAUTHORIZED","message":"missing bearer token"}}`},
		{CodeInvalidExecution, "request body exceeds 1048576 bytes", `{"version":1,"error":{"code":"INVALID_EXECUTION","message":"request body exceeds 1048576 bytes"}}`},
		{CodeNotFound, "no route /v2/x", `{"version":1,"error":{"code":"NOT_FOUND","message":"no route /v2/x"}}`},
		{CodeMethodNotAllowed, "use POST", `{"version":1,"error":{"code":"METHOD_NOT_ALLOWED","message":"use POST"}}`},
		{CodeUnavailable, "", `{"version":1,"error":{"code":"UNAVAILABLE","message":""}}`},
		{CodeInternal, `say "hi"`, `{"version":1,"error":{"code":"INTERNAL","message":"say \"hi\""}}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			if got := marshal(t, NewErrorResponse(tt.code, tt.message)); got != tt.want {
				t.Errorf("NewErrorResponse body mismatch\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestParseCapability(t *testing.T) {
	tests := []struct {
		in           string
		wantAction   string
		wantResource string
		wantErr      string
	}{
		{in: "model:general", wantAction: ActionModelInvoke, wantResource: "general"},
		{in: "tool:github/*", wantAction: ActionToolCall, wantResource: "github/*"},
		{in: "http:api.example.com", wantAction: ActionHTTPRequest, wantResource: "api.example.com"},
		{in: "workflow:child-*", wantAction: ActionWorkflowRun, wantResource: "child-*"},
		{in: "tool:*", wantAction: ActionToolCall, wantResource: "*"},
		{in: "http:https://a.example:8443/x", wantAction: ActionHTTPRequest, wantResource: "https://a.example:8443/x"},
		{in: "disk:/etc/*", wantErr: `"disk:/etc/*": unknown kind "disk" (want model, tool, http or workflow)`},
		{in: "Tool:github/*", wantErr: `"Tool:github/*": unknown kind "Tool" (want model, tool, http or workflow)`},
		{in: "tool.call:github/*", wantErr: `"tool.call:github/*": unknown kind "tool.call" (want model, tool, http or workflow)`},
		{in: ":github/*", wantErr: `":github/*": unknown kind "" (want model, tool, http or workflow)`},
		{in: "tool:", wantErr: `"tool:" is not of the form kind:glob`},
		{in: "tool", wantErr: `"tool" is not of the form kind:glob`},
		{in: "github/*", wantErr: `"github/*" is not of the form kind:glob`},
		{in: "", wantErr: `"" is not of the form kind:glob`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			action, resource, err := ParseCapability(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("ParseCapability(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				if action != "" || resource != "" {
					t.Errorf("ParseCapability(%q) = %q, %q with an error, want empty", tt.in, action, resource)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCapability(%q): %v", tt.in, err)
			}
			if action != tt.wantAction || resource != tt.wantResource {
				t.Errorf("ParseCapability(%q) = %q, %q; want %q, %q", tt.in, action, resource, tt.wantAction, tt.wantResource)
			}
		})
	}
}

// TestHTTPStatus pins the one code-to-status mapping the handler and the
// Lambda adapter share, and the 413 exception for bodies over the limit.
func TestHTTPStatus(t *testing.T) {
	tests := []struct {
		code Code
		want int
	}{
		{CodeInvalidExecution, 400},
		{CodeUnauthorized, 401},
		{CodeNotFound, 404},
		{CodeMethodNotAllowed, 405},
		{CodeInternal, 500},
		{CodeUnavailable, 503},
		{CodeExecutionFailed, 500},
		{CodeFailed, 500},
		{Code("NO_SUCH_CODE"), 500},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			if got := HTTPStatus(tt.code); got != tt.want {
				t.Errorf("HTTPStatus(%s) = %d, want %d", tt.code, got, tt.want)
			}
		})
	}
	status, body := BodyTooLarge(1 << 20)
	if status != 413 || body.Error.Code != CodeInvalidExecution || body.Error.Message != "request body exceeds 1048576 bytes" {
		t.Errorf("BodyTooLarge = %d %+v, want 413 INVALID_EXECUTION", status, body)
	}
	status, body = BodyTooSlow(10 * time.Second)
	if status != 408 || body.Error.Code != CodeInvalidExecution || body.Error.Message != "request body not received within 10s" {
		t.Errorf("BodyTooSlow = %d %+v, want 408 INVALID_EXECUTION", status, body)
	}
}
