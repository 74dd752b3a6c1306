package permission

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name   string
		config Config
		paths  []string // every protocol.Detail path, in order; nil means valid
		msg    string   // substring of the first message
	}{
		{name: "nothing", config: Config{}},
		{name: "empty permissions", config: Config{Permissions: []string{}}},
		{name: "every valid form", config: Config{
			Permissions: []string{"model:*", "tool:*", "tool:*/*", "tool:github/create_*", "http:*", "http:*.example.com",
				"http:API.example.com.", "http:::1", "workflow:review", "workflow:team/review"},
			ToolPolicies: policies("allow */*", "consent github/create_* writes", "deny */delete_*"),
			Grants:       []protocol.Grant{{Action: tool, Resource: "github/*"}, {Action: httpReq, Resource: "*.example.com"}, {Action: model, Resource: "*"}},
		}},
		{name: "no kind", config: Config{Permissions: []string{"model:*", "github"}},
			paths: []string{"permissions[1]"}, msg: "kind:glob"},
		{name: "unknown kind", config: Config{Permissions: []string{"file:/etc/*"}},
			paths: []string{"permissions[0]"}, msg: "unknown kind"},
		{name: "empty glob", config: Config{Permissions: []string{"tool:"}},
			paths: []string{"permissions[0]"}, msg: "kind:glob"},
		{name: "double star", config: Config{Permissions: []string{"tool:github/**"}},
			paths: []string{"permissions[0]"}, msg: "'**'"},
		{name: "white space", config: Config{Permissions: []string{"model:gen eral"}},
			paths: []string{"permissions[0]"}, msg: "white space"},
		{name: "tool without toolset", config: Config{Permissions: []string{"tool:github"}},
			paths: []string{"permissions[0]"}, msg: "toolset/tool"},
		{name: "tool with two slashes", config: Config{Permissions: []string{"tool:a/b/c"}},
			paths: []string{"permissions[0]"}, msg: "toolset/tool"},
		{name: "http with port", config: Config{Permissions: []string{"http:api.example.com:443"}},
			paths: []string{"permissions[0]"}, msg: "without scheme, port or path"},
		{name: "http with URL", config: Config{Permissions: []string{"http:https://api.example.com/"}},
			paths: []string{"permissions[0]"}, msg: "without scheme, port or path"},
		{name: "policy match without slash", config: Config{ToolPolicies: policies("allow github/*", "deny *")},
			paths: []string{"toolPolicies[1].match"}, msg: "toolset/glob"},
		{name: "policy match empty", config: Config{ToolPolicies: []protocol.ToolPolicy{{Decision: "deny"}}},
			paths: []string{"toolPolicies[0].match"}, msg: "empty pattern"},
		{name: "policy match empty toolset", config: Config{ToolPolicies: policies("deny /x")},
			paths: []string{"toolPolicies[0].match"}, msg: "toolset/glob"},
		{name: "policy decision unknown", config: Config{ToolPolicies: policies("maybe github/*")},
			paths: []string{"toolPolicies[0].decision"}, msg: `"maybe" is not a decision`},
		{name: "policy decision is case-sensitive", config: Config{ToolPolicies: policies("Deny github/*")},
			paths: []string{"toolPolicies[0].decision"}},
		{name: "policy with both wrong", config: Config{ToolPolicies: []protocol.ToolPolicy{{Match: "github", Decision: ""}}},
			paths: []string{"toolPolicies[0].match", "toolPolicies[0].decision"}},
		{name: "grant unknown action", config: Config{Grants: []protocol.Grant{{Action: tool, Resource: "*"}, {Action: "tool.delete", Resource: "*"}}},
			paths: []string{"authorization.grants[1].action"}, msg: "unknown action"},
		{name: "grant empty resource", config: Config{Grants: []protocol.Grant{{Action: tool}}},
			paths: []string{"authorization.grants[0].resource"}, msg: "empty pattern"},
		{name: "grant with both wrong", config: Config{Grants: []protocol.Grant{{}}},
			paths: []string{"authorization.grants[0].action", "authorization.grants[0].resource"}},
		{name: "grant tool shape", config: Config{Grants: []protocol.Grant{{Action: tool, Resource: "pager"}}},
			paths: []string{"authorization.grants[0].resource"}, msg: "toolset/tool"},
		{name: "grant http port", config: Config{Grants: []protocol.Grant{{Action: httpReq, Resource: "example.com:80"}}},
			paths: []string{"authorization.grants[0].resource"}},
		{name: "all problems at once", config: Config{
			Permissions:  []string{"model:*", "nope", "tool:x/**"},
			ToolPolicies: policies("allow github/*", "sometimes x/y"),
			Grants:       []protocol.Grant{{Action: "x", Resource: "y"}},
		}, paths: []string{"permissions[1]", "permissions[2]", "toolPolicies[1].decision", "authorization.grants[0].action"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(tt.config)
			if tt.paths == nil {
				if err != nil || d == nil {
					t.Fatalf("New = %v, %v; want a Decider", d, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New succeeded, want errors at %v", tt.paths)
			}
			if d != nil {
				t.Errorf("New returned a Decider with an error")
			}
			var fe *protocol.Detail
			if !errors.As(err, &fe) {
				t.Fatalf("error %v holds no *protocol.Detail", err)
			}
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok {
				t.Fatalf("error %T does not unwrap to a list", err)
			}
			var paths []string
			for _, e := range joined.Unwrap() {
				fe, ok := e.(*protocol.Detail)
				if !ok {
					t.Fatalf("error %T (%v) is not a *protocol.Detail", e, e)
				}
				if fe.Message == "" {
					t.Errorf("%s: empty message", fe.Path)
				}
				if fe.Error() != fe.Path+": "+fe.Message {
					t.Errorf("Error() = %q", fe.Error())
				}
				paths = append(paths, fe.Path)
			}
			if !reflect.DeepEqual(paths, tt.paths) {
				t.Errorf("paths = %q, want %q\n%v", paths, tt.paths, err)
			}
			if first := joined.Unwrap()[0].(*protocol.Detail); !strings.Contains(first.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", first.Message, tt.msg)
			}
		})
	}
}
