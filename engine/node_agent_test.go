package engine

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// This file tests the agent node: the real models adapter against a local
// OpenAI-compatible server scripting the model's turns, and the real
// toolsets adapter against the MCP server of node_tool_test.go.

// toolNames returns the function names a Chat Completions request offered.
func toolNames(body map[string]any) []string {
	var out []string
	tools, _ := body["tools"].([]any)
	for _, tool := range tools {
		out = append(out, fmt.Sprint(svcGet(tool, "function", "name")))
	}
	slices.Sort(out)
	return out
}

// toolMessages returns the contents of the tool turns of a request.
func toolMessages(body map[string]any) []string {
	var out []string
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		if svcGet(m, "role") == "tool" {
			out = append(out, fmt.Sprint(svcGet(m, "content")))
		}
	}
	return out
}

func TestAgentNode(t *testing.T) {
	tests := []struct {
		name      string
		with      string // with members besides role/prompt
		extra     string
		turns     []string // the model's replies in order; the last repeats
		wantText  string
		wantSteps string // steps, JSON
		wantCode  protocol.Code
		wantMsg   string
		suspended bool
		calls     []string // tools the MCP server ran
		usage     protocol.Usage
		check     func(t *testing.T, reqs []fakeModelRequest)
	}{
		{
			name: "two tool rounds",
			with: `"toolsets":["math"]`,
			turns: []string{
				toolCallReply([2]string{"math__add", `{"a":2,"b":3}`}),
				toolCallReply([2]string{"math__echo", `{"text":"five"}`}),
				chatReply("gpt-agent", "The sum is five.", 30, 4),
			},
			wantText: "The sum is five.",
			wantSteps: `[{"tool":"math/add","arguments":{"a":2,"b":3},"isError":false},
				{"tool":"math/echo","arguments":{"text":"five"},"isError":false}]`,
			calls: []string{"add", "echo"},
			usage: protocol.Usage{ModelCalls: 3, ToolCalls: 2, InputTokens: 50, OutputTokens: 14},
			check: func(t *testing.T, reqs []fakeModelRequest) {
				if len(reqs) != 3 {
					t.Fatalf("%d model calls, want 3", len(reqs))
				}
				want := []string{"math__add", "math__echo", "math__fail", "math__slow", "math__whoami"}
				if got := toolNames(reqs[0].body); !slices.Equal(got, want) {
					t.Errorf("tools offered = %q, want %q", got, want)
				}
				if got := toolMessages(reqs[1].body); len(got) != 1 || !strings.Contains(got[0], `"sum":5`) {
					t.Errorf("second call's tool turns = %q, want the sum", got)
				}
				if got := toolMessages(reqs[2].body); len(got) != 2 || got[1] != "five" {
					t.Errorf("third call's tool turns = %q, want both results", got)
				}
				if got := svcGet(reqs[2].body, "messages", 1, "tool_calls", 0, "function", "name"); got != "math__add" {
					t.Errorf("assistant turn replayed with tool call %v, want math__add", got)
				}
			},
		},
		{
			name: "tools filter",
			with: `"toolsets":["math"],"tools":["echo","math/ad*"]`,
			turns: []string{
				chatReply("gpt-agent", "nothing to do", 5, 1),
			},
			wantText:  "nothing to do",
			wantSteps: `[]`,
			usage:     protocol.Usage{ModelCalls: 1, InputTokens: 5, OutputTokens: 1},
			check: func(t *testing.T, reqs []fakeModelRequest) {
				if got, want := toolNames(reqs[0].body), []string{"math__add", "math__echo"}; !slices.Equal(got, want) {
					t.Errorf("tools offered = %q, want %q", got, want)
				}
			},
		},
		{
			name: "maxSteps reached",
			with: `"toolsets":["math"],"maxSteps":2`,
			turns: []string{
				toolCallReply([2]string{"math__add", `{"a":1,"b":1}`}),
			},
			wantCode: protocol.CodeLimitExceeded,
			wantMsg:  "maxSteps (2) reached",
			calls:    []string{"add"}, // the second turn's call is not run
		},
		{
			name:  "denied tool call is fed back",
			with:  `"toolsets":["math"]`,
			extra: `"toolPolicies":[{"match":"math/add","decision":"deny","reason":"no sums"}]`,
			turns: []string{
				toolCallReply([2]string{"math__add", `{"a":1,"b":1}`}),
				chatReply("gpt-agent", "I may not add.", 9, 2),
			},
			wantText:  "I may not add.",
			wantSteps: `[{"tool":"math/add","arguments":{"a":1,"b":1},"isError":true,"denied":true}]`,
			usage:     protocol.Usage{ModelCalls: 2, InputTokens: 19, OutputTokens: 7},
			check: func(t *testing.T, reqs []fakeModelRequest) {
				if got := toolMessages(reqs[1].body); len(got) != 1 || !strings.Contains(got[0], "permission denied") || !strings.Contains(got[0], "no sums") {
					t.Errorf("tool turn = %q, want the denial and its reason", got)
				}
			},
		},
		{
			name:  "consent suspends the node",
			with:  `"toolsets":["math"]`,
			extra: `"toolPolicies":[{"match":"math/*","decision":"consent"}],"consentAvailable":true`,
			turns: []string{
				toolCallReply([2]string{"math__add", `{"a":1,"b":1}`}),
			},
			suspended: true,
		},
		{
			name: "tool errors and unknown tools go back to the model",
			with: `"toolsets":["math"]`,
			turns: []string{
				toolCallReply([2]string{"math__fail", `{}`}, [2]string{"math__nope", `{}`}, [2]string{"math__echo", `[1]`}),
				chatReply("gpt-agent", "all failed", 1, 1),
			},
			wantText: "all failed",
			wantSteps: `[{"tool":"math/fail","arguments":{},"isError":true},
				{"tool":"math__nope","arguments":{},"isError":true},
				{"tool":"math/echo","arguments":[1],"isError":true}]`,
			calls: []string{"fail"},
			usage: protocol.Usage{ModelCalls: 2, ToolCalls: 1, InputTokens: 11, OutputTokens: 6},
			check: func(t *testing.T, reqs []fakeModelRequest) {
				got := toolMessages(reqs[1].body)
				want := []string{"failed on purpose", `no tool named "math__nope"`, "must be a JSON object"}
				if len(got) != len(want) {
					t.Fatalf("tool turns = %q", got)
				}
				for i := range want {
					if !strings.Contains(got[i], want[i]) {
						t.Errorf("tool turn %d = %q, want %q", i, got[i], want[i])
					}
				}
			},
		},
		{
			name:      "no toolsets is a plain conversation",
			with:      `"system":"terse"`,
			turns:     []string{chatReply("gpt-agent", "hi", 1, 1)},
			wantText:  "hi",
			wantSteps: `[]`,
			usage:     protocol.Usage{ModelCalls: 1, InputTokens: 1, OutputTokens: 1},
			check: func(t *testing.T, reqs []fakeModelRequest) {
				if _, ok := reqs[0].body["tools"]; ok {
					t.Errorf("tools sent without toolsets: %v", reqs[0].body["tools"])
				}
			},
		},
		{
			name:     "filter selecting nothing",
			with:     `"toolsets":["math"],"tools":["github/*"]`,
			turns:    []string{chatReply("gpt-agent", "hi", 1, 1)},
			wantCode: protocol.CodeToolError,
			wantMsg:  "selects no tool",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools := newSvcMCP(t)
			model := newFakeModel(t, func(n int, _ map[string]any, _ http.Header) (int, string) {
				return 200, tt.turns[min(n, len(tt.turns)-1)]
			})
			e, _ := svcEngine(t, nil)
			s := svcRun(t, e, svcReq{
				workflow: `{"nodes":[{"id":"a","type":"agent","with":{"prompt":"add 2 and 3",` + tt.with + `}}]}`,
				runtime:  `{"models":[` + model.entry("general", "gpt-agent") + `],"toolsets":[` + tools.toolset("math", "") + `]}`,
				extra:    tt.extra,
			})
			switch {
			case tt.wantCode != "":
				s.failure(t)
				f := s.nodeFailed("a")
				if f == nil || f.Error.Code != tt.wantCode || !strings.Contains(f.Error.Message, tt.wantMsg) {
					t.Errorf("node.failed = %+v, want %s containing %q", f, tt.wantCode, tt.wantMsg)
				}
			case tt.suspended:
				res := s.result(t)
				want := []protocol.Suspension{{NodeID: "a", Action: protocol.ActionToolCall, Resource: "math/add"}}
				if res.Status != protocol.StatusSuspended || !reflect.DeepEqual(res.Suspended, want) {
					t.Errorf("result %s %+v, want suspended %+v", res.Status, res.Suspended, want)
				}
			default:
				res := s.result(t)
				out := outputOf(t, res)
				if got := svcGet(out, "a", "text"); got != tt.wantText {
					t.Errorf("text = %v, want %q", got, tt.wantText)
				}
				if got, want := svcGet(out, "a", "steps"), jsonValue(t, tt.wantSteps); !reflect.DeepEqual(got, want) {
					b, _ := json.Marshal(got)
					t.Errorf("steps = %s, want %s", b, tt.wantSteps)
				}
				wantUsage := map[string]any{"inputTokens": float64(tt.usage.InputTokens), "outputTokens": float64(tt.usage.OutputTokens)}
				if got := svcGet(out, "a", "usage"); !reflect.DeepEqual(got, wantUsage) {
					t.Errorf("output usage = %v, want %v", got, wantUsage)
				}
				if res.Usage != tt.usage {
					t.Errorf("usage = %+v, want %+v", res.Usage, tt.usage)
				}
			}
			if got := tools.called(); !slices.Equal(got, tt.calls) {
				t.Errorf("server ran %q, want %q", got, tt.calls)
			}
			if tt.check != nil {
				tt.check(t, model.requests())
			}
		})
	}
}

// Every model call and every tool call of an agent is decided and audited;
// the literal role's first call uses the preflight decision.
func TestAgentNodeDecisions(t *testing.T) {
	tools := newSvcMCP(t)
	turns := []string{
		toolCallReply([2]string{"math__add", `{"a":1,"b":2}`}),
		chatReply("gpt-agent", "3", 1, 1),
	}
	model := newFakeModel(t, func(n int, _ map[string]any, _ http.Header) (int, string) { return 200, turns[min(n, 1)] })
	e, _ := svcEngine(t, nil)
	s := svcRun(t, e, svcReq{
		workflow: `{"nodes":[{"id":"a","type":"agent","with":{"role":"general","prompt":"x","toolsets":["math"]}}]}`,
		runtime:  `{"models":[` + model.entry("general", "gpt-agent") + `],"toolsets":[` + tools.toolset("math", "") + `]}`,
	})
	s.result(t)
	want := []string{
		"a model.invoke general allow", // preflight, used by the first call
		"a tool.call math/add allow",
		"a model.invoke general allow",
	}
	if got := svcDecisions(s); !slices.Equal(got, want) {
		t.Errorf("decisions = %q, want %q", got, want)
	}
}

func TestAgentNodePrepare(t *testing.T) {
	tests := []struct {
		name    string
		with    string
		path    string
		message []string
	}{
		{"unknown toolset", `{"role":"writer","prompt":"x","toolsets":["math","github"]}`, "workflow.nodes[0].with.toolsets[1]", []string{`unknown toolset "github"`}},
		{"maxSteps over the cap", `{"role":"writer","prompt":"x","maxSteps":40}`, "workflow.nodes[0].with.maxSteps", []string{"from 1 to 32"}},
		{"maxSteps zero", `{"role":"writer","prompt":"x","maxSteps":0}`, "workflow.nodes[0].with.maxSteps", []string{"from 1 to 32"}},
		{"bad tool filter", `{"role":"writer","prompt":"x","tools":["a**"]}`, "workflow.nodes[0].with.tools[0]", nil},
		{"literal role missing", `{"role":"critic","prompt":"x"}`, "workflow.nodes[0].with.role", []string{`no model for role "critic"`}},
		{"no prompt", `{"role":"writer","toolsets":["math"]}`, "workflow.nodes[0].with", []string{"prompt or messages"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := svcEngine(t, nil)
			inv := prepareInvalid(t, e, svcReq{
				workflow: `{"nodes":[{"id":"a","type":"agent","with":` + tt.with + `}]}`,
				runtime:  `{"models":[{"role":"writer","provider":"openai","model":"m"}],"toolsets":[{"name":"math","url":"http://127.0.0.1:1/mcp"}]}`,
			}.String())
			wantProblems(t, inv.Details, []problem{{tt.path, tt.message}}, nil)
		})
	}
}
