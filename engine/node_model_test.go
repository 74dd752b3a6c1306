package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// This file tests the model node through the real models adapter against a
// local OpenAI-compatible server, and holds the harness the service node
// tests share (node_tool_test.go, node_agent_test.go, node_http_test.go,
// redaction_test.go). Harness names start with svc.

// svcReq is an execution request of a service test. Fields hold JSON;
// empty ones are left out.
type svcReq struct {
	workflow string
	input    string
	runtime  string // the runtime object
	extra    string // more top-level members: `"permissions":["model:*"]`
	trace    bool
}

func (r svcReq) String() string {
	var b strings.Builder
	b.WriteString(`{"version":1,"workflow":` + r.workflow)
	if r.input != "" {
		b.WriteString(`,"input":` + r.input)
	}
	if r.runtime != "" {
		b.WriteString(`,"runtime":` + r.runtime)
	}
	if r.extra != "" {
		b.WriteString("," + r.extra)
	}
	if r.trace {
		b.WriteString(`,"trace":true`)
	}
	b.WriteString("}")
	return b.String()
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// svcEngine returns an engine whose model calls use an HTTP client of the
// test (its idle connections closed at the end, for goleak) without
// retries, and whose log lines, debug included, go to the returned buffer.
// mod adjusts the services.
func svcEngine(t *testing.T, mod func(*Services)) (*Engine, *syncBuffer) {
	t.Helper()
	e := New(DefaultLimits())
	// The toolsets of a finished execution close after Run returns.
	t.Cleanup(e.WaitClosed)
	logs := &syncBuffer{}
	e.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	e.Services.Models = &models.Clients{HTTPClient: hc, MaxRetries: -1}
	if mod != nil {
		mod(&e.Services)
	}
	return e, logs
}

// svcRun prepares and runs a request to its end.
func svcRun(t *testing.T, e *Engine, req svcReq) *recSink {
	t.Helper()
	x := prepareReq(t, e, req.String())
	s := &recSink{}
	x.Run(t.Context(), s)
	return s
}

// svcDecisions returns the permission.decision events as
// "node action resource decision".
func svcDecisions(s *recSink) []string {
	var out []string
	for _, e := range s.all() {
		if d, ok := e.(*protocol.PermissionDecision); ok {
			out = append(out, fmt.Sprintf("%s %s %s %s", d.NodeID, d.Action, d.Resource, d.Decision))
		}
	}
	return out
}

// svcGet walks a decoded JSON value along keys (string) and indexes (int),
// returning nil where the path does not exist.
func svcGet(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[p]
		case int:
			a, _ := v.([]any)
			if p >= len(a) {
				return nil
			}
			v = a[p]
		}
	}
	return v
}

// fakeModel is an OpenAI-compatible Chat Completions server that answers
// with reply and records every request.
type fakeModel struct {
	*httptest.Server
	reply func(n int, req map[string]any, h http.Header) (status int, body string)

	mu   sync.Mutex
	reqs []fakeModelRequest
}

type fakeModelRequest struct {
	body   map[string]any
	header http.Header
}

func newFakeModel(t *testing.T, reply func(n int, req map[string]any, h http.Header) (int, string)) *fakeModel {
	t.Helper()
	f := &fakeModel{reply: reply}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, fakeModelRequest{body: body, header: r.Header.Clone()})
		f.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"no such path"}}`, http.StatusNotFound)
			return
		}
		status, out := f.reply(n, body, r.Header)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(f.Close)
	return f
}

// requests returns the requests received so far.
func (f *fakeModel) requests() []fakeModelRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeModelRequest(nil), f.reqs...)
}

// entry is a runtime.models entry for this server.
func (f *fakeModel) entry(role, model string) string {
	return fmt.Sprintf(`{"role":%q,"provider":"openai","model":%q,"apiKey":"sk-test-key","baseUrl":"%s/v1"}`, role, model, f.URL)
}

// chatReply is a Chat Completions reply with text.
func chatReply(model, text string, in, out int) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text}}},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
	return string(b)
}

// toolCallReply is a reply asking for tool calls, each {name, arguments}.
func toolCallReply(calls ...[2]string) string {
	var tc []any
	for i, c := range calls {
		tc = append(tc, map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
			"function": map[string]any{"name": c[0], "arguments": c[1]}})
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-2", "object": "chat.completion", "created": 1, "model": "gpt-agent",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": tc}}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	return string(b)
}

func TestModelNode(t *testing.T) {
	labelSchema := `{"type":"object","required":["label"],"properties":{"label":{"type":"string"}}}`
	tests := []struct {
		name     string
		nodes    string // the workflow's nodes
		input    string
		models   string // runtime.models entries: {writer} and {general} are the server's
		reply    func(n int) (int, string)
		wantOut  string        // the result output, when completed
		wantCode protocol.Code // the failing node's code, when failed
		wantMsg  string        // ... and a part of its message
		check    func(t *testing.T, reqs []fakeModelRequest, out any)
		usage    protocol.Usage // when completed
	}{
		{
			name:   "fields as sent and output",
			nodes:  `[{"id":"m","type":"model","with":{"role":"writer","system":"Be brief.","prompt":"Hi ${{ input.who }}","temperature":0.5,"maxTokens":100}}]`,
			input:  `{"who":"Ann"}`,
			models: `[{writer}]`,
			reply:  func(int) (int, string) { return 200, chatReply("gpt-writer-2", "Hello Ann", 7, 3) },
			wantOut: `{"m":{"text":"Hello Ann","model":"gpt-writer-2","finishReason":"stop",
				"usage":{"inputTokens":7,"outputTokens":3}}}`,
			usage: protocol.Usage{ModelCalls: 1, InputTokens: 7, OutputTokens: 3},
			check: func(t *testing.T, reqs []fakeModelRequest, _ any) {
				b := reqs[0].body
				if b["model"] != "gpt-writer" || b["temperature"] != 0.5 || b["max_tokens"] != 100.0 {
					t.Errorf("model, temperature, max_tokens = %v, %v, %v", b["model"], b["temperature"], b["max_tokens"])
				}
				want := []any{
					map[string]any{"role": "system", "content": "Be brief."},
					map[string]any{"role": "user", "content": "Hi Ann"},
				}
				if !reflect.DeepEqual(b["messages"], want) {
					t.Errorf("messages = %v, want %v", b["messages"], want)
				}
				if got := reqs[0].header.Get("Authorization"); got != "Bearer sk-test-key" {
					t.Errorf("Authorization = %q", got)
				}
			},
		},
		{
			name:   "messages then prompt",
			nodes:  `[{"id":"m","type":"model","with":{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"prompt":"c"}}]`,
			models: `[{general}]`,
			reply:  func(int) (int, string) { return 200, chatReply("g", "ok", 1, 1) },
			wantOut: `{"m":{"text":"ok","model":"g","finishReason":"stop",
				"usage":{"inputTokens":1,"outputTokens":1}}}`,
			usage: protocol.Usage{ModelCalls: 1, InputTokens: 1, OutputTokens: 1},
			check: func(t *testing.T, reqs []fakeModelRequest, _ any) {
				var roles []string
				for _, m := range reqs[0].body["messages"].([]any) {
					roles = append(roles, fmt.Sprint(svcGet(m, "role"), ":", svcGet(m, "content")))
				}
				if got := strings.Join(roles, " "); got != "user:a assistant:b user:c" {
					t.Errorf("messages = %s", got)
				}
			},
		},
		{
			name:    "a missing role falls back to general",
			nodes:   `[{"id":"m","type":"model","with":{"role":"classifier","prompt":"x"}}]`,
			models:  `[{writer},{general}]`,
			reply:   func(int) (int, string) { return 200, chatReply("", "ok", 2, 1) },
			wantOut: `{"m":{"text":"ok","model":"gpt-general","finishReason":"stop","usage":{"inputTokens":2,"outputTokens":1}}}`,
			usage:   protocol.Usage{ModelCalls: 1, InputTokens: 2, OutputTokens: 1},
			check: func(t *testing.T, reqs []fakeModelRequest, _ any) {
				if reqs[0].body["model"] != "gpt-general" {
					t.Errorf("model = %v, want gpt-general", reqs[0].body["model"])
				}
			},
		},
		{
			name:   "usage summed over nodes",
			nodes:  `[{"id":"a","type":"model","with":{"prompt":"x"}},{"id":"b","type":"model","needs":["a"],"with":{"prompt":"${{ nodes.a.output.text }}"}}]`,
			models: `[{general}]`,
			reply: func(n int) (int, string) {
				return 200, chatReply("g", fmt.Sprint("answer", n), 10*(n+1), n+1)
			},
			wantOut: `{"b":{"text":"answer1","model":"g","finishReason":"stop","usage":{"inputTokens":20,"outputTokens":2}}}`,
			usage:   protocol.Usage{ModelCalls: 2, InputTokens: 30, OutputTokens: 3},
			check: func(t *testing.T, reqs []fakeModelRequest, _ any) {
				if got := svcGet(reqs[1].body, "messages", 0, "content"); got != "answer0" {
					t.Errorf("second prompt = %v, want the first answer", got)
				}
			},
		},
		{
			name:   "json schema matched",
			nodes:  `[{"id":"m","type":"model","with":{"prompt":"label it","json":` + labelSchema + `}}]`,
			models: `[{general}]`,
			reply:  func(int) (int, string) { return 200, chatReply("g", `{"label":"bug"}`, 1, 1) },
			wantOut: `{"m":{"text":"{\"label\":\"bug\"}","json":{"label":"bug"},"model":"g","finishReason":"stop",
				"usage":{"inputTokens":1,"outputTokens":1}}}`,
			usage: protocol.Usage{ModelCalls: 1, InputTokens: 1, OutputTokens: 1},
			check: func(t *testing.T, reqs []fakeModelRequest, _ any) {
				rf := reqs[0].body["response_format"]
				if svcGet(rf, "type") != "json_schema" || svcGet(rf, "json_schema", "schema", "required", 0) != "label" {
					t.Errorf("response_format = %v, want the node's schema", rf)
				}
			},
		},
		{
			name:   "json in a code fence",
			nodes:  `[{"id":"m","type":"model","with":{"prompt":"label it","json":` + labelSchema + `}}]`,
			models: `[{general}]`,
			reply:  func(int) (int, string) { return 200, chatReply("g", "```json\n{\"label\":\"bug\"}\n```", 1, 1) },
			check: func(t *testing.T, _ []fakeModelRequest, out any) {
				if got := svcGet(out, "m", "json", "label"); got != "bug" {
					t.Errorf("json.label = %v, want bug", got)
				}
			},
			usage: protocol.Usage{ModelCalls: 1, InputTokens: 1, OutputTokens: 1},
		},
		{
			name:     "json not matching the schema",
			nodes:    `[{"id":"m","type":"model","with":{"prompt":"label it","json":` + labelSchema + `}}]`,
			models:   `[{general}]`,
			reply:    func(int) (int, string) { return 200, chatReply("g", `{"label":3}`, 1, 1) },
			wantCode: protocol.CodeModelError,
			wantMsg:  "does not match with.json: json.label",
		},
		{
			name:     "a reply's value just outside the schema's enum is named",
			nodes:    `[{"id":"m","type":"model","with":{"prompt":"label it","json":{"type":"object","properties":{"label":{"enum":["bug","feature"]}}}}}]`,
			models:   `[{general}]`,
			reply:    func(int) (int, string) { return 200, chatReply("g", `{"label":"featur"}`, 1, 1) },
			wantCode: protocol.CodeModelError,
			wantMsg:  `json.label: value must be one of "bug", "feature" (did you mean "feature"?)`,
		},
		{
			name:     "reply that is not JSON",
			nodes:    `[{"id":"m","type":"model","with":{"prompt":"label it","json":true}}]`,
			models:   `[{general}]`,
			reply:    func(int) (int, string) { return 200, chatReply("g", `I think it is a bug`, 1, 1) },
			wantCode: protocol.CodeModelError,
			wantMsg:  "not valid JSON",
		},
		{
			name:     "provider error",
			nodes:    `[{"id":"m","type":"model","with":{"prompt":"x"}}]`,
			models:   `[{general}]`,
			reply:    func(int) (int, string) { return 500, `{"error":{"message":"upstream exploded","type":"server_error"}}` },
			wantCode: protocol.CodeModelError,
			wantMsg:  "openai 500 from http://127.0.0.1:",
		},
		{
			name:     "a base URL without /v1 names the URL of its 404",
			nodes:    `[{"id":"m","type":"model","with":{"prompt":"x"}}]`,
			models:   `[{general}]`,
			reply:    func(int) (int, string) { return 404, "" },
			wantCode: protocol.CodeModelError,
			wantMsg:  "openai 404 Not Found from http://127.0.0.1:",
		},
		{
			name:     "templated role without a model",
			nodes:    `[{"id":"m","type":"model","with":{"role":"${{ input.role }}","prompt":"x"}}]`,
			input:    `{"role":"critic"}`,
			models:   `[{writer}]`,
			reply:    func(int) (int, string) { return 200, chatReply("g", "ok", 1, 1) },
			wantCode: protocol.CodeModelError,
			wantMsg:  `no model for role "critic"`,
		},
		{
			name:     "temperature out of range at run time",
			nodes:    `[{"id":"m","type":"model","with":{"prompt":"x","temperature":"${{ input.t }}"}}]`,
			input:    `{"t":7}`,
			models:   `[{general}]`,
			reply:    func(int) (int, string) { return 200, chatReply("g", "ok", 1, 1) },
			wantCode: protocol.CodeExpressionError,
			wantMsg:  "temperature",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeModel(t, func(n int, _ map[string]any, _ http.Header) (int, string) { return tt.reply(n) })
			entries := strings.NewReplacer(
				"{writer}", srv.entry("writer", "gpt-writer"),
				"{general}", srv.entry("general", "gpt-general"),
			).Replace(tt.models)
			e, _ := svcEngine(t, nil)
			s := svcRun(t, e, svcReq{
				workflow: `{"nodes":` + tt.nodes + `}`,
				input:    tt.input,
				runtime:  `{"models":` + entries + `}`,
			})
			if tt.wantCode != "" {
				s.failure(t)
				f := s.nodeFailed("m")
				if f == nil || f.Error.Code != tt.wantCode || !strings.Contains(f.Error.Message, tt.wantMsg) {
					t.Fatalf("node.failed = %+v, want %s containing %q", f, tt.wantCode, tt.wantMsg)
				}
				return
			}
			res := s.result(t)
			if tt.wantOut != "" {
				wantOutput(t, res, tt.wantOut)
			}
			if res.Usage != tt.usage {
				t.Errorf("usage = %+v, want %+v", res.Usage, tt.usage)
			}
			if tt.check != nil {
				tt.check(t, srv.requests(), outputOf(t, res))
			}
		})
	}
}

// The deployment's table serves executions without runtime.models, and
// runtime.models, even empty, replaces it entirely.
func TestModelNodeDeploymentTable(t *testing.T) {
	srv := newFakeModel(t, func(int, map[string]any, http.Header) (int, string) {
		return 200, chatReply("", "from the deployment", 1, 1)
	})
	var m protocol.Model
	if err := json.Unmarshal([]byte(srv.entry("general", "gpt-deployed")), &m); err != nil {
		t.Fatal(err)
	}
	table, err := models.NewTable("RUNNER_MODELS", []protocol.Model{m})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := svcEngine(t, func(s *Services) { s.ModelTable = table })
	wf := `{"nodes":[{"id":"m","type":"model","with":{"prompt":"x"}}]}`

	res := svcRun(t, e, svcReq{workflow: wf}).result(t)
	wantOutput(t, res, `{"m":{"text":"from the deployment","model":"gpt-deployed","finishReason":"stop","usage":{"inputTokens":1,"outputTokens":1}}}`)

	inv := prepareInvalid(t, e, svcReq{workflow: wf, runtime: `{"models":[]}`}.String())
	wantProblems(t, inv.Details, []problem{{"workflow.nodes[0].with.role", []string{`no model for role "general"`, "runtime.models", "it is empty"}}}, nil)
}

// Model nodes are checked before acceptance: statically named roles, the
// runtime.models payload, the json schema, the prompt.
func TestModelNodePrepare(t *testing.T) {
	good := `[{"role":"writer","provider":"openai","model":"m","apiKey":"k"}]`
	tests := []struct {
		name    string
		node    string // the with of a model node "m"
		models  string
		path    string
		message []string
	}{
		{"literal role missing, no general", `{"role":"critic","prompt":"x"}`, good,
			"workflow.nodes[0].with.role", []string{`node "m"`, `no model for role "critic"`, `"writer"`}},
		{"default role missing", `{"prompt":"x"}`, good,
			"workflow.nodes[0].with.role", []string{`no model for role "general"`}},
		{"no model table at all", `{"prompt":"x"}`, "",
			"workflow.nodes[0].with.role", []string{"the runner's model table", "it is empty"}},
		{"invalid runtime.models", `{"role":"writer","prompt":"x"}`, `[{"role":"writer","provider":"watson","model":"m"}]`,
			"runtime.models[0].provider", []string{`unknown provider "watson"`}},
		// Credentials stay home: the runner's AWS role is not sent to an
		// endpoint the request names, nor may a region name another host.
		{"bedrock baseUrl without apiKey", `{"role":"writer","prompt":"x"}`, `[{"role":"writer","provider":"bedrock","model":"m","baseUrl":"https://gw.example.com"}]`,
			"runtime.models[0].apiKey", []string{"is required for a bedrock entry with a baseUrl", "RUNNER_MODEL_ENDPOINTS"}},
		{"bedrock baseUrl with userinfo, no apiKey", `{"role":"writer","prompt":"x"}`, `[{"role":"writer","provider":"bedrock","model":"m","baseUrl":"https://u:p@gw.example.com/v1"}]`,
			"runtime.models[0].apiKey", []string{"is required for a bedrock entry with a baseUrl"}},
		{"region naming another host", `{"role":"writer","prompt":"x"}`, `[{"role":"writer","provider":"bedrock","model":"m","region":"x.s3"}]`,
			"runtime.models[0].region", []string{"must be an AWS region"}},
		{"invalid json schema", `{"role":"writer","prompt":"x","json":{"type":"nonsense"}}`, good,
			"workflow.nodes[0].with.json.type", []string{"invalid JSON Schema", `"nonsense" is not a type`}},
		{"neither prompt nor messages", `{"role":"writer"}`, good,
			"workflow.nodes[0].with", []string{"prompt or messages"}},
		{"temperature out of range", `{"role":"writer","prompt":"x","temperature":3}`, good,
			"workflow.nodes[0].with.temperature", []string{"between 0 and 2"}},
		{"secrets in a prompt", `{"role":"writer","prompt":"${{ secrets.token }}"}`, good,
			"workflow.nodes[0].with.prompt", []string{"secrets are only available in an http node"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := svcEngine(t, nil)
			rt := `{"http":{"secrets":{"token":"s3cr3t-value"}}}`
			if tt.models != "" {
				rt = `{"models":` + tt.models + `,"http":{"secrets":{"token":"s3cr3t-value"}}}`
			}
			inv := prepareInvalid(t, e, svcReq{
				workflow: `{"nodes":[{"id":"m","type":"model","with":` + tt.node + `}]}`,
				runtime:  rt,
			}.String())
			wantProblems(t, inv.Details, []problem{{tt.path, tt.message}}, []string{"s3cr3t-value", `"k"`})
		})
	}
}

// A literal role is decided in preflight and the decision is used by the
// node's call; a denied role fails the node before any request.
func TestModelNodePermissions(t *testing.T) {
	tests := []struct {
		name      string
		extra     string
		wantCalls int
		wantCode  protocol.Code
		decisions []string
	}{
		{"allowed", `"permissions":["model:general"]`, 1, "", []string{"m model.invoke general allow"}},
		{"denied", `"permissions":["model:writer"]`, 0, protocol.CodePermissionDenied, []string{"m model.invoke general deny"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeModel(t, func(int, map[string]any, http.Header) (int, string) { return 200, chatReply("g", "ok", 1, 1) })
			e, _ := svcEngine(t, nil)
			s := svcRun(t, e, svcReq{
				workflow: `{"nodes":[{"id":"m","type":"model","with":{"prompt":"x"}}]}`,
				runtime:  `{"models":[` + srv.entry("general", "g") + `]}`,
				extra:    tt.extra,
			})
			if got := len(srv.requests()); got != tt.wantCalls {
				t.Errorf("server got %d requests, want %d", got, tt.wantCalls)
			}
			if got := svcDecisions(s); !reflect.DeepEqual(got, tt.decisions) {
				t.Errorf("decisions = %q, want %q", got, tt.decisions)
			}
			if tt.wantCode == "" {
				s.result(t)
				return
			}
			s.failure(t)
			if f := s.nodeFailed("m"); f == nil || f.Error.Code != tt.wantCode {
				t.Errorf("node.failed = %+v, want %s", f, tt.wantCode)
			}
		})
	}
}

// A role missing from the model table is answered by general: the node's
// node.started says so, the requested role redacted like any text.
func TestModelNodeRoleFallbackOnNodeStarted(t *testing.T) {
	srv := newFakeModel(t, func(int, map[string]any, http.Header) (int, string) { return 200, chatReply("g", "ok", 1, 1) })
	tests := []struct {
		name, node, input, models string
		want                      *protocol.RoleFallback
	}{
		{"a missing role falls back", `{"id":"m","type":"model","with":{"role":"critic","prompt":"x"}}`, "", `[{general}]`,
			&protocol.RoleFallback{Requested: "critic", Used: "general"}},
		{"a templated role", `{"id":"m","type":"model","with":{"role":"${{ input.role }}","prompt":"x"}}`, `{"role":"critic"}`, `[{general}]`,
			&protocol.RoleFallback{Requested: "critic", Used: "general"}},
		{"an agent node", `{"id":"m","type":"agent","with":{"role":"planner","prompt":"x"}}`, "", `[{general}]`,
			&protocol.RoleFallback{Requested: "planner", Used: "general"}},
		{"a secret as the role is redacted", `{"id":"m","type":"model","with":{"role":"${{ input.role }}","prompt":"x"}}`, `{"role":"sk-test-key"}`, `[{general}]`,
			&protocol.RoleFallback{Requested: redact.Marker, Used: "general"}},
		{"the role is in the table", `{"id":"m","type":"model","with":{"role":"writer","prompt":"x"}}`, "", `[{writer},{general}]`, nil},
		{"no role: general itself", `{"id":"m","type":"model","with":{"prompt":"x"}}`, "", `[{general}]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries := strings.NewReplacer("{writer}", srv.entry("writer", "gpt-writer"), "{general}", srv.entry("general", "gpt-general")).Replace(tt.models)
			e, _ := svcEngine(t, nil)
			s := svcRun(t, e, svcReq{workflow: `{"nodes":[` + tt.node + `]}`, input: tt.input, runtime: `{"models":` + entries + `}`})
			s.result(t)
			var got []*protocol.RoleFallback
			for _, ev := range s.all() {
				if st, ok := ev.(*protocol.NodeStarted); ok {
					got = append(got, st.Role)
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d node.started events, want 1", len(got))
			}
			if (got[0] == nil) != (tt.want == nil) || (got[0] != nil && *got[0] != *tt.want) {
				t.Errorf("role %+v, want %+v", got[0], tt.want)
			}
		})
	}
}
