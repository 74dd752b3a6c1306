package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file tests the tool node through the real toolsets adapter against
// an MCP server built with the official SDK, and holds that server for
// node_agent_test.go and redaction_test.go.

// svcMCP is a real MCP server behind an httptest server. It offers:
//
//	add {a, b}   structured {sum}
//	echo {text}  the text
//	fail         an isError result: "the tool failed on purpose"
//	whoami       an isError result quoting the Authorization header it got
//	slow         blocks until the call is cancelled or the test ends
type svcMCP struct {
	*httptest.Server
	srv     *mcp.Server
	release chan struct{} // closed when the test ends: ends slow calls

	mu    sync.Mutex
	calls []string // tool names, in call order
}

type svcAddIn struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type svcAddOut struct {
	Sum int `json:"sum"`
}

type svcEchoIn struct {
	Text string `json:"text"`
}

func newSvcMCP(t *testing.T) *svcMCP {
	t.Helper()
	m := &svcMCP{srv: mcp.NewServer(&mcp.Implementation{Name: "svc-test", Version: "1"}, nil), release: make(chan struct{})}
	mcp.AddTool(m.srv, &mcp.Tool{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in svcAddIn) (*mcp.CallToolResult, svcAddOut, error) {
			m.record("add")
			return nil, svcAddOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(m.srv, &mcp.Tool{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in svcEchoIn) (*mcp.CallToolResult, any, error) {
			m.record("echo")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(m.srv, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			m.record("fail")
			return nil, nil, errors.New("the tool failed on purpose")
		})
	mcp.AddTool(m.srv, &mcp.Tool{Name: "whoami", Description: "Complains about the credentials it got."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			m.record("whoami")
			return nil, nil, fmt.Errorf("credentials %q are not valid here", req.Extra.Header.Get("Authorization"))
		})
	mcp.AddTool(m.srv, &mcp.Tool{Name: "slow", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			m.record("slow")
			// The client's cancellation is a notification that may lose
			// the race with its goodbye: the end of the test ends it too,
			// since closing a session waits for its running tools.
			select {
			case <-ctx.Done():
			case <-m.release:
			}
			return nil, nil, errors.New("slow call ended")
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.srv }, nil)
	m.Server = httptest.NewServer(h)
	t.Cleanup(func() {
		close(m.release)
		// Sessions whose client could not say goodbye would outlive the
		// test otherwise.
		for ss := range m.srv.Sessions() {
			_ = ss.Close()
		}
		m.CloseClientConnections()
		m.Close()
	})
	return m
}

func (m *svcMCP) record(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, name)
}

// called returns the tools called so far, in order.
func (m *svcMCP) called() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// toolset is a runtime.toolsets entry named name for this server.
func (m *svcMCP) toolset(name, extra string) string {
	return fmt.Sprintf(`{"name":%q,"url":%q%s}`, name, m.URL, extra)
}

func TestToolNode(t *testing.T) {
	tests := []struct {
		name      string
		nodes     string
		input     string
		toolset   string // extra members of the "math" toolset entry
		extra     string // extra request members
		wantOut   string
		wantCode  protocol.Code // of the failing node "t"
		wantMsg   string
		suspended bool
		calls     []string
		toolCalls int64
		decisions []string
	}{
		{
			name:      "structured result",
			nodes:     `[{"id":"t","type":"tool","with":{"toolset":"math","tool":"add","arguments":{"a":2,"b":3}}}]`,
			wantOut:   `{"t":{"content":[{"type":"text","text":"{\"sum\":5}"}],"structured":{"sum":5},"isError":false}}`,
			calls:     []string{"add"},
			toolCalls: 1,
			decisions: []string{"t tool.call math/add allow"},
		},
		{
			name:      "templated arguments",
			nodes:     `[{"id":"t","type":"tool","with":{"toolset":"math","tool":"echo","arguments":{"text":"hi ${{ input.who }}"}}}]`,
			input:     `{"who":"Ann"}`,
			wantOut:   `{"t":{"content":[{"type":"text","text":"hi Ann"}],"isError":false}}`,
			calls:     []string{"echo"},
			toolCalls: 1,
			decisions: []string{"t tool.call math/echo allow"},
		},
		{
			name:      "templated tool decided at run time",
			nodes:     `[{"id":"t","type":"tool","with":{"toolset":"math","tool":"${{ input.tool }}","arguments":{"text":"x"}}}]`,
			input:     `{"tool":"echo"}`,
			wantOut:   `{"t":{"content":[{"type":"text","text":"x"}],"isError":false}}`,
			calls:     []string{"echo"},
			toolCalls: 1,
			decisions: []string{"t tool.call math/echo allow"},
		},
		{
			name:      "isError fails the node",
			nodes:     `[{"id":"t","type":"tool","with":{"toolset":"math","tool":"fail"}}]`,
			wantCode:  protocol.CodeToolError,
			wantMsg:   "tool math/fail returned an error: the tool failed on purpose",
			calls:     []string{"fail"},
			toolCalls: 1,
			decisions: []string{"t tool.call math/fail allow"},
		},
		{
			name: "isError with onError continue",
			nodes: `[{"id":"t","type":"tool","onError":"continue","with":{"toolset":"math","tool":"fail"}},
				{"id":"after","type":"set","needs":["t"],"when":"true","with":{"value":"${{ nodes.t.error.code }}"}}]`,
			wantOut:   `{"after":"TOOL_ERROR"}`,
			calls:     []string{"fail"},
			toolCalls: 1,
			decisions: []string{"t tool.call math/fail allow"},
		},
		{
			name:      "unknown tool",
			nodes:     `[{"id":"t","type":"tool","with":{"toolset":"math","tool":"divide"}}]`,
			wantCode:  protocol.CodeToolError,
			wantMsg:   "divide",
			toolCalls: 1,
			decisions: []string{"t tool.call math/divide allow"},
		},
		{
			name:      "toolset timeout",
			nodes:     `[{"id":"t","type":"tool","with":{"toolset":"math","tool":"slow"}}]`,
			toolset:   `,"timeoutMs":300`,
			wantCode:  protocol.CodeTimeout,
			calls:     []string{"slow"},
			toolCalls: 1,
			decisions: []string{"t tool.call math/slow allow"},
		},
		{
			name:      "denied by a tool policy",
			nodes:     `[{"id":"t","type":"tool","with":{"toolset":"math","tool":"add","arguments":{"a":1,"b":1}}}]`,
			extra:     `"toolPolicies":[{"match":"math/add","decision":"deny","reason":"no sums today"}]`,
			wantCode:  protocol.CodePermissionDenied,
			wantMsg:   "no sums today",
			decisions: []string{"t tool.call math/add deny"},
		},
		{
			name:      "consent suspends before the call",
			nodes:     `[{"id":"t","type":"tool","with":{"toolset":"math","tool":"add","arguments":{"a":1,"b":1}}}]`,
			extra:     `"toolPolicies":[{"match":"math/*","decision":"consent"}],"consentAvailable":true`,
			suspended: true,
			decisions: []string{"t tool.call math/add consent"},
		},
		{
			name:      "granted consent",
			nodes:     `[{"id":"t","type":"tool","with":{"toolset":"math","tool":"add","arguments":{"a":1,"b":1}}}]`,
			extra:     `"toolPolicies":[{"match":"math/*","decision":"consent"}],"consentAvailable":true,"authorization":{"grants":["tool:math/add"]}`,
			wantOut:   `{"t":{"content":[{"type":"text","text":"{\"sum\":2}"}],"structured":{"sum":2},"isError":false}}`,
			calls:     []string{"add"},
			toolCalls: 1,
			decisions: []string{"t tool.call math/add allow"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSvcMCP(t)
			e, _ := svcEngine(t, nil)
			s := svcRun(t, e, svcReq{
				workflow: `{"nodes":` + tt.nodes + `}`,
				input:    tt.input,
				runtime:  `{"toolsets":[` + srv.toolset("math", tt.toolset) + `]}`,
				extra:    tt.extra,
			})
			switch {
			case tt.wantCode != "":
				s.failure(t)
				f := s.nodeFailed("t")
				if f == nil || f.Error.Code != tt.wantCode || !strings.Contains(f.Error.Message, tt.wantMsg) {
					t.Errorf("node.failed = %+v, want %s containing %q", f, tt.wantCode, tt.wantMsg)
				}
			case tt.suspended:
				res := s.result(t)
				want := []protocol.Suspension{{NodeID: "t", Action: protocol.ActionToolCall, Resource: "math/add"}}
				if res.Status != protocol.StatusSuspended || !reflect.DeepEqual(res.Suspended, want) {
					t.Errorf("result %s %+v, want suspended %+v", res.Status, res.Suspended, want)
				}
			default:
				res := s.result(t)
				wantOutput(t, res, tt.wantOut)
				if res.Usage.ToolCalls != tt.toolCalls {
					t.Errorf("usage.toolCalls = %d, want %d", res.Usage.ToolCalls, tt.toolCalls)
				}
			}
			if got := srv.called(); !slices.Equal(got, tt.calls) {
				t.Errorf("server ran %q, want %q", got, tt.calls)
			}
			if got := svcDecisions(s); !slices.Equal(got, tt.decisions) {
				t.Errorf("decisions = %q, want %q", got, tt.decisions)
			}
		})
	}
}

func TestToolNodePrepare(t *testing.T) {
	tests := []struct {
		name     string
		with     string
		toolsets string
		path     string
		message  []string
	}{
		{"unknown literal toolset", `{"toolset":"github","tool":"x"}`, `[{"name":"math","url":"http://127.0.0.1:1/mcp"}]`,
			"workflow.nodes[0].with.toolset", []string{`node "t"`, `unknown toolset "github"`, `"math"`}},
		{"no toolsets at all", `{"toolset":"github","tool":"x"}`, `[]`,
			"workflow.nodes[0].with.toolset", []string{"it is empty"}},
		{"invalid toolset url", `{"toolset":"math","tool":"x"}`, `[{"name":"math","url":"ftp://example.com/mcp"}]`,
			"runtime.toolsets[0].url", nil},
		{"invalid toolset transport", `{"toolset":"math","tool":"x"}`, `[{"name":"math","url":"http://127.0.0.1:1/mcp","transport":"stdio"}]`,
			"runtime.toolsets[0].transport", nil},
		{"secrets in arguments", `{"toolset":"math","tool":"x","arguments":{"k":"${{ secrets.token }}"}}`, `[{"name":"math","url":"http://127.0.0.1:1/mcp"}]`,
			"workflow.nodes[0].with.arguments.k", []string{"secrets are only available"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := svcEngine(t, nil)
			inv := prepareInvalid(t, e, svcReq{
				workflow: `{"nodes":[{"id":"t","type":"tool","with":` + tt.with + `}]}`,
				runtime:  `{"toolsets":` + tt.toolsets + `,"http":{"secrets":{"token":"s3cr3t-value"}}}`,
			}.String())
			wantProblems(t, inv.Details, []problem{{tt.path, tt.message}}, []string{"s3cr3t-value"})
		})
	}
}
