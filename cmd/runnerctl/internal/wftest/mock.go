package wftest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runnerd/lambda-runner/engine/nodes"
	"github.com/runnerd/lambda-runner/protocol"
)

// mockKey is the API key every mocked model entry carries: a key the
// providers' clients send, never a real one.
const mockKey = "mock-key"

// maxMockBody bounds a request body a mock reads.
const maxMockBody = 8 << 20

// mocks serves one case's mocks on the loopback and records its calls.
// Models and toolsets are reached at this server's own address (their
// entries' baseUrl and url are pointed at it); every other connection,
// an http node's to any host, is dialled to it too (dial), so nothing
// leaves the process.
type mocks struct {
	srv  *httptest.Server
	addr string
	// plain and tls answer http nodes' http:// and https:// requests
	// (the latter spoken as plain HTTP on the dialled connection); started
	// on the first, as most cases make none.
	httpOnce   sync.Once
	plain, tls *httptest.Server

	c       *Mocks
	entries []protocol.Model // runtime.models, by index in the path

	mu       sync.Mutex
	replies  map[string]int // next reply, by role
	calls    Calls
	failures []string
	seenHTTP []httpCall
}

// Calls counts the requests a case sent.
type Calls struct {
	Models int `json:"models"`
	Tools  int `json:"tools"`
	HTTP   int `json:"http"`
}

type httpCall struct{ method, url string }

// newMocks starts the servers of c; close stops them. rt is the case's
// runtime, whose model entries and toolsets it rewrites to reach them.
func newMocks(c *Mocks, rt *protocol.Runtime) *mocks {
	m := &mocks{c: c, replies: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/models/{i}/", m.serveModel)
	m.srv = httptest.NewServer(mux)
	m.addr = m.srv.Listener.Addr().String()

	m.entries = rt.Models
	for i := range rt.Models {
		e := &rt.Models[i]
		// https: Bedrock sends a key only over TLS; the dialled
		// connection to this server is taken as past the handshake.
		e.BaseURL = fmt.Sprintf("https://%s/models/%d", m.addr, i)
		e.APIKey = mockKey
		e.Headers = nil
	}
	for i := range rt.Toolsets {
		t := &rt.Toolsets[i]
		mux.Handle("/toolsets/"+strconv.Itoa(i), m.countTools(t.Name, m.mcpHandler(t.Name)))
		t.URL = fmt.Sprintf("http://%s/toolsets/%d", m.addr, i)
		t.Headers = nil
	}
	return m
}

func (m *mocks) close() {
	m.srv.Close()
	m.httpOnce.Do(func() {}) // none starts from now on
	if m.plain != nil {
		m.plain.Close()
		m.tls.Close()
	}
}

// dial is egress.Options.Dial: this server for its own address, the http
// mocks for every other.
func (m *mocks) dial(ctx context.Context, addr string, tls bool) (net.Conn, error) {
	m.httpOnce.Do(func() {
		m.plain = httptest.NewServer(m.httpHandler("http"))
		m.tls = httptest.NewServer(m.httpHandler("https"))
	})
	to := m.plain
	switch {
	case addr == m.addr:
		to = m.srv // a model entry's or a toolset's, https or not
	case tls:
		to = m.tls
	}
	if to == nil {
		return nil, fmt.Errorf("runnerctl test: the case has ended")
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", to.Listener.Addr().String())
}

// fail records why the case fails, once per message.
func (m *mocks) fail(format string, args ...any) string {
	msg := fmt.Sprintf(format, args...)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.failures {
		if f == msg {
			return msg
		}
	}
	m.failures = append(m.failures, msg)
	return msg
}

// serveModel answers a model call in its provider's wire format from the
// next reply of its role.
func (m *mocks) serveModel(w http.ResponseWriter, r *http.Request) {
	i, err := strconv.Atoi(r.PathValue("i"))
	if err != nil || i < 0 || i >= len(m.entries) {
		http.NotFound(w, r)
		return
	}
	e := m.entries[i]
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxMockBody))
	m.mu.Lock()
	m.calls.Models++
	n := m.replies[e.Role]
	m.replies[e.Role] = n + 1
	m.mu.Unlock()

	var seq []Reply
	found := false
	for _, mm := range m.c.Models {
		if mm.Role == e.Role {
			seq, found = mm.Replies, true
			break
		}
	}
	if n >= len(seq) {
		var msg string
		if !found {
			msg = m.fail("model call of role %q (%s %s): no mock for the role", e.Role, e.Provider, e.Model)
		} else {
			msg = m.fail("model call %d of role %q (%s %s): the mock has only %d replies", n+1, e.Role, e.Provider, e.Model, len(seq))
		}
		writeModelError(w, e.Provider, http.StatusBadRequest, "runnerctl test: "+msg)
		return
	}
	rep := seq[n]
	if rep.Error != nil {
		status := rep.Error.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		writeModelError(w, e.Provider, status, rep.Error.Message)
		return
	}
	var tools []string
	var req struct {
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		ToolConfig struct {
			Tools []struct {
				ToolSpec struct {
					Name string `json:"name"`
				} `json:"toolSpec"`
			} `json:"tools"`
		} `json:"toolConfig"`
	}
	_ = json.Unmarshal(body, &req)
	for _, t := range req.Tools {
		tools = append(tools, t.Name, t.Function.Name)
	}
	for _, t := range req.ToolConfig.Tools {
		tools = append(tools, t.ToolSpec.Name)
	}
	calls := make([]wireCall, len(rep.ToolCalls))
	for k, tc := range rep.ToolCalls {
		args := tc.Arguments
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage("{}")
		}
		calls[k] = wireCall{id: fmt.Sprintf("call_%d_%d", n+1, k+1), name: exposed(tc.Name, tools), args: args}
	}
	writeModelReply(w, e, rep, calls)
}

// exposed is the name the runner showed the model for "toolset/tool":
// "toolset__tool" with the characters providers refuse replaced (as the
// agent node names tools), or a name given as is.
func exposed(name string, shown []string) string {
	ts, tool, ok := strings.Cut(name, "/")
	if !ok {
		return name
	}
	base := nodes.AgentToolName(ts, tool)
	for _, s := range shown {
		if s == base {
			return s
		}
	}
	return base
}

// countTools counts the tools/call requests of toolset name and fails the
// case for a call no mock answers, before the MCP server sees it.
func (m *mocks) countTools(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, maxMockBody))
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				m.mu.Lock()
				m.calls.Tools++
				m.mu.Unlock()
				if _, ok := m.findTool(name, msg.Params.Name, msg.Params.Arguments); !ok {
					m.fail("tool call %s/%s %s: no mock matches", name, msg.Params.Name, compact(msg.Params.Arguments))
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// findTool returns the first tool mock of toolset/tool whose arguments
// are a subset of args.
func (m *mocks) findTool(toolset, tool string, args json.RawMessage) (ToolMock, bool) {
	var got any
	_ = json.Unmarshal(args, &got)
	for _, t := range m.c.Tools {
		if t.Toolset != toolset || t.Tool != tool {
			continue
		}
		if len(bytes.TrimSpace(t.Arguments)) > 0 {
			var want any
			if json.Unmarshal(t.Arguments, &want) != nil || !subset(want, got) {
				continue
			}
		}
		return t, true
	}
	return ToolMock{}, false
}

// mcpHandler is an MCP server (the go-sdk's, streamable HTTP) listing the
// tools mocked for toolset name and answering their calls.
func (m *mocks) mcpHandler(name string) http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "runnerctl-test-" + name, Version: "1"}, nil)
	seen := map[string]bool{}
	for _, t := range m.c.Tools {
		if t.Toolset != name || seen[t.Tool] {
			continue
		}
		seen[t.Tool] = true
		tool := t.Tool
		srv.AddTool(&mcp.Tool{Name: tool, InputSchema: &jsonschema.Schema{Type: "object"}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var args json.RawMessage
				if req.Params != nil {
					args = req.Params.Arguments
				}
				tm, ok := m.findTool(name, tool, args)
				if !ok {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "runnerctl test: no mock of " + name + "/" + tool + " matches the arguments " + compact(args)}
				}
				if tm.Error != nil {
					code := tm.Error.Code
					if code == 0 {
						code = jsonrpc.CodeInternalError
					}
					return nil, &jsonrpc.Error{Code: code, Message: tm.Error.Message}
				}
				res := &mcp.CallToolResult{}
				if len(tm.Result) > 0 {
					if err := json.Unmarshal(tm.Result, res); err != nil {
						return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "runnerctl test: the mock's result is not a tool result: " + err.Error()}
					}
				}
				if res.Content == nil {
					res.Content = []mcp.Content{}
				}
				return res, nil
			})
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
}

// httpHandler answers http node requests made over scheme.
func (m *mocks) httpHandler(scheme string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		url := scheme + "://" + r.Host + r.URL.RequestURI()
		m.mu.Lock()
		m.calls.HTTP++
		m.seenHTTP = append(m.seenHTTP, httpCall{r.Method, url})
		m.mu.Unlock()
		for _, h := range m.c.HTTP {
			if h.Method != "" && !strings.EqualFold(h.Method, r.Method) {
				continue
			}
			if !matchURL(h.URL, url) {
				continue
			}
			writeHTTPMock(w, h)
			return
		}
		msg := m.fail("http call %s %s: no mock matches", r.Method, url)
		http.Error(w, "runnerctl test: "+msg, http.StatusNotImplemented)
	})
}

// writeHTTPMock writes h's answer: a string body as text, any other JSON
// value as JSON.
func writeHTTPMock(w http.ResponseWriter, h HTTPMock) {
	status := h.Status
	if status == 0 {
		status = http.StatusOK
	}
	body := bytes.TrimSpace(h.Body)
	var text string
	isText := len(body) > 0 && body[0] == '"' && json.Unmarshal(body, &text) == nil
	if _, set := h.Headers["Content-Type"]; !set && len(body) > 0 {
		if isText {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
	}
	for k, v := range h.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	if isText {
		_, _ = io.WriteString(w, text)
	} else {
		_, _ = w.Write(body)
	}
}

// compact is a JSON value on one line, for messages.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil || b.Len() == 0 {
		return "{}"
	}
	return b.String()
}

// subset reports whether every member want names is equal in got,
// recursively for objects; other values are compared whole.
func subset(want, got any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return jsonEqual(want, got)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range wm {
		gv, ok := gm[k]
		if !ok || !subset(wv, gv) {
			return false
		}
	}
	return true
}
