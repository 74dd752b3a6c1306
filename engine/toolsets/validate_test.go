package toolsets

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

func TestValidate(t *testing.T) {
	ok := protocol.Toolset{Name: "pager", URL: "https://mcp.example.com/mcp"}
	with := func(f func(*protocol.Toolset)) protocol.Toolset {
		d := ok
		f(&d)
		return d
	}
	const secret = "Bearer s3cr3t-v4lue"
	tests := []struct {
		name  string
		defs  []protocol.Toolset
		paths []string // every protocol.Detail path, in order; nil means valid
		msg   string   // substring of the first message
	}{
		{name: "none", defs: nil},
		{name: "valid", defs: []protocol.Toolset{
			ok,
			{Name: "gh_tools-2.x", URL: "http://127.0.0.1:8080/mcp?k=v", Transport: "streamable-http", TimeoutMs: 5000,
				Headers: map[string]string{"Authorization": secret, "X-Api-Key": "k\tv"}},
		}},
		{name: "missing name", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.Name = "" })},
			paths: []string{"runtime.toolsets[0].name"}, msg: "required"},
		{name: "name with slash", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.Name = "a/b" })},
			paths: []string{"runtime.toolsets[0].name"}, msg: "letters, digits"},
		{name: "name with glob", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.Name = "gh*" })},
			paths: []string{"runtime.toolsets[0].name"}},
		{name: "name too long", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.Name = strings.Repeat("a", 65) })},
			paths: []string{"runtime.toolsets[0].name"}, msg: "longer than 64"},
		{name: "duplicate name", defs: []protocol.Toolset{ok, with(func(d *protocol.Toolset) { d.URL = "https://other.example.com" }), ok},
			paths: []string{"runtime.toolsets[1].name", "runtime.toolsets[2].name"}, msg: "runtime.toolsets[0]"},
		{name: "missing url", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.URL = "" })},
			paths: []string{"runtime.toolsets[0].url"}, msg: "required"},
		{name: "relative url", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.URL = "/mcp" })},
			paths: []string{"runtime.toolsets[0].url"}, msg: "absolute"},
		{name: "websocket url", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.URL = "wss://mcp.example.com" })},
			paths: []string{"runtime.toolsets[0].url"}, msg: "http or https"},
		{name: "url without host", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.URL = "https:///mcp" })},
			paths: []string{"runtime.toolsets[0].url"}, msg: "host"},
		{name: "unparsable url", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.URL = "https://exa mple.com/%zz" })},
			paths: []string{"runtime.toolsets[0].url"}},
		{name: "url with credentials", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.URL = "https://u:pw-77@mcp.example.com" })},
			paths: []string{"runtime.toolsets[0].url"}, msg: "credentials"},
		{name: "sse transport", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.Transport = "sse" })},
			paths: []string{"runtime.toolsets[0].transport"}, msg: `"sse" is not supported`},
		{name: "stdio transport", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.Transport = "stdio" })},
			paths: []string{"runtime.toolsets[0].transport"}, msg: `"stdio"`},
		{name: "negative timeout", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.TimeoutMs = -1 })},
			paths: []string{"runtime.toolsets[0].timeoutMs"}, msg: "negative"},
		{name: "bad header name", defs: []protocol.Toolset{with(func(d *protocol.Toolset) { d.Headers = map[string]string{"X Key": "v", "": "v"} })},
			paths: []string{`runtime.toolsets[0].headers[""]`, `runtime.toolsets[0].headers["X Key"]`}, msg: "not a valid header name"},
		{name: "reserved header", defs: []protocol.Toolset{with(func(d *protocol.Toolset) {
			d.Headers = map[string]string{"mcp-session-id": "x", "Content-Type": "text/plain"}
		})},
			paths: []string{`runtime.toolsets[0].headers["Content-Type"]`, `runtime.toolsets[0].headers["mcp-session-id"]`}, msg: "MCP transport"},
		{name: "header in two cases", defs: []protocol.Toolset{with(func(d *protocol.Toolset) {
			d.Headers = map[string]string{"Authorization": secret, "authorization": secret}
		})},
			paths: []string{`runtime.toolsets[0].headers["authorization"]`}, msg: `repeats header "Authorization"`},
		{name: "header value with newline", defs: []protocol.Toolset{with(func(d *protocol.Toolset) {
			d.Headers = map[string]string{"Authorization": secret + "\r\nX-Evil: 1"}
		})},
			paths: []string{`runtime.toolsets[0].headers["Authorization"]`}, msg: "control character"},
		{name: "all problems at once", defs: []protocol.Toolset{
			ok,
			{Name: "pager", URL: "ftp://x", Transport: "sse", TimeoutMs: -5, Headers: map[string]string{"Host": "x"}},
		}, paths: []string{
			"runtime.toolsets[1].name", "runtime.toolsets[1].url", "runtime.toolsets[1].transport",
			"runtime.toolsets[1].timeoutMs", `runtime.toolsets[1].headers["Host"]`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate("runtime.toolsets", tt.defs)
			if tt.paths == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want errors at %q", tt.paths)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "pw-77") {
				t.Errorf("error %q shows a secret", err)
			}
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok {
				t.Fatalf("error %T does not unwrap to a list", err)
			}
			var paths []string
			for _, e := range joined.Unwrap() {
				var fe *protocol.Detail
				if !errors.As(e, &fe) {
					t.Fatalf("error %T (%v) is not a *protocol.Detail", e, e)
				}
				if fe.Message == "" || fe.Error() != fe.Path+": "+fe.Message {
					t.Errorf("protocol.Detail %+v: Error() = %q", fe, fe.Error())
				}
				paths = append(paths, fe.Path)
			}
			if !reflect.DeepEqual(paths, tt.paths) {
				t.Errorf("paths = %q, want %q\n%v", paths, tt.paths, err)
			}
			var first *protocol.Detail
			errors.As(joined.Unwrap()[0], &first)
			if !strings.Contains(first.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", first.Message, tt.msg)
			}
		})
	}
}
