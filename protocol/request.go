package protocol

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/runnerd/lambda-runner/protocol/redact"
)

// ExecutionRequest is the body of POST /v1/executions.
//
// Optional slices distinguish "absent" (nil) from "present but empty"
// (non-nil, zero length): an absent Permissions field means no restriction,
// an empty one means everything is denied.
type ExecutionRequest struct {
	Version          int             `json:"version"`
	Workflow         json.RawMessage `json:"workflow"`
	Input            json.RawMessage `json:"input,omitempty"`
	Trace            bool            `json:"trace,omitempty"`
	Runtime          Runtime         `json:"runtime"`
	Permissions      []string        `json:"permissions,omitempty"`
	Authorization    Authorization   `json:"authorization"`
	ToolPolicies     []ToolPolicy    `json:"toolPolicies,omitempty"`
	ConsentAvailable bool            `json:"consentAvailable,omitempty"`

	// WorkflowValue is what Decoder.Workflow made of Workflow as the body
	// was read: nil when no Workflow was given or the body had to be read
	// again another way. It is not part of the wire format.
	WorkflowValue any `json:"-"`
}

// Runtime carries the services an execution may use.
type Runtime struct {
	// Models replaces the deployment's own model table when non-nil.
	Models    []Model           `json:"models,omitempty"`
	Toolsets  []Toolset         `json:"toolsets,omitempty"`
	Workflows []json.RawMessage `json:"workflows,omitempty"`
	HTTP      HTTPRuntime       `json:"http"`
}

// Model binds a role to a provider and model.
type Model struct {
	Role        string            `json:"role"`
	Provider    string            `json:"provider"`
	Model       string            `json:"model"`
	APIKey      string            `json:"apiKey,omitempty"`
	BaseURL     string            `json:"baseUrl,omitempty"`
	Region      string            `json:"region,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Temperature *float64          `json:"temperature,omitempty"`
	MaxTokens   *int              `json:"maxTokens,omitempty"`
}

// Toolset is an MCP server reachable over streamable HTTP.
type Toolset struct {
	Name      string            `json:"name"`
	URL       string            `json:"url"`
	Transport string            `json:"transport,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	TimeoutMs int               `json:"timeoutMs,omitempty"`
}

// HTTPRuntime is the HTTP node's policy and named secrets.
type HTTPRuntime struct {
	Policy  HTTPPolicy        `json:"policy"`
	Secrets map[string]Secret `json:"secrets,omitempty"`
}

// HTTPPolicy governs every request an http node makes. Zero values mean
// "the runner's default".
type HTTPPolicy struct {
	AllowHosts          []string `json:"allowHosts,omitempty"`
	DenyHosts           []string `json:"denyHosts,omitempty"`
	Methods             []string `json:"methods,omitempty"`
	AllowPrivateNetwork bool     `json:"allowPrivateNetwork,omitempty"`
	MaxResponseBytes    int64    `json:"maxResponseBytes,omitempty"`
	TimeoutMs           int      `json:"timeoutMs,omitempty"`
	MaxRequests         int      `json:"maxRequests,omitempty"`
	MaxRedirects        *int     `json:"maxRedirects,omitempty"`
}

// Secret is a named HTTP secret. On the wire it is either a bare string or
// {"value": "...", "hosts": ["api.example.com"]}; a secret with Hosts is
// never sent to any other host.
type Secret struct {
	Value string   `json:"value"`
	Hosts []string `json:"hosts,omitempty"`
}

// UnmarshalJSON accepts both the string and the object form.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = Secret{Value: str}
		return nil
	}
	type plain Secret
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("must be a string or an object {value, hosts}")
	}
	*s = Secret(p)
	return nil
}

// String never reveals the value, so a Secret printed by mistake is harmless.
func (s Secret) String() string { return redact.Marker }

// Authorization carries launch grants: consents already given.
type Authorization struct {
	Grants []Grant `json:"grants,omitempty"`
}

// Grant allows one action on the resources matching a glob. On the wire it is
// an object {"action":"tool.call","resource":"github/*"} or the short string
// form used by permissions, "tool:github/*".
type Grant struct {
	Action   string `json:"action"`
	Resource string `json:"resource"`
}

// UnmarshalJSON accepts both the object and the "kind:glob" form.
func (g *Grant) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		action, resource, err := ParseCapability(str)
		if err != nil {
			return err
		}
		*g = Grant{Action: action, Resource: resource}
		return nil
	}
	type plain Grant
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("must be a string \"kind:glob\" or an object {action, resource}")
	}
	*g = Grant(p)
	return nil
}

// ToolPolicy is a host tool policy: a decision for the tools matching
// "toolset/glob".
type ToolPolicy struct {
	Match    string `json:"match"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// Actions: every side effect an execution can have.
const (
	ActionModelInvoke = "model.invoke"
	ActionToolCall    = "tool.call"
	ActionHTTPRequest = "http.request"
	ActionWorkflowRun = "workflow.run"
)

// capabilityKinds maps the short kinds of permissions[] to actions.
var capabilityKinds = map[string]string{
	"model":    ActionModelInvoke,
	"tool":     ActionToolCall,
	"http":     ActionHTTPRequest,
	"workflow": ActionWorkflowRun,
}

// ParseCapability splits a "kind:glob" string (a permissions[] entry or a
// short-form grant) into its action and resource glob.
func ParseCapability(s string) (action, resource string, err error) {
	kind, glob, ok := strings.Cut(s, ":")
	if !ok || glob == "" {
		return "", "", fmt.Errorf("%q is not of the form kind:glob", s)
	}
	action, known := capabilityKinds[kind]
	if !known {
		return "", "", fmt.Errorf("%q: unknown kind %q (want model, tool, http or workflow)", s, kind)
	}
	return action, glob, nil
}
