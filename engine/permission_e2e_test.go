package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runnerd/lambda-runner/engine/permission"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file checks that the audit log is complete against the real http
// and tool nodes and real servers: http nodes go through the egress client
// (whose Authorize hook runs before every hop, redirects included) to an
// HTTP server, tool nodes through the execution's toolsets.Set to a real MCP
// server. Each server records every request it receives in the same ordered
// log as the execution's events, so the audit scan (gateAudit) can check
// that every request that reached a server was preceded by exactly one allow
// decision for its node and resource, and that none reached a server after
// a deny or a consent. The workflows name the calling node in a header
// (http) or an argument (tool) so that the server can attribute what it
// receives.

// e2eServers are an HTTP server and an MCP server (toolsets "calc" and
// "pager", told apart by path) that record what reaches them.
type e2eServers struct {
	h    *gateHarness
	http *httptest.Server
	mcp  *httptest.Server

	mu    sync.Mutex
	hits  map[string]int // "GET /ok", "tools/call calc/add", "POST /calc"…
	flaky int
}

func newE2EServers(t *testing.T, h *gateHarness) *e2eServers {
	t.Helper()
	s := &e2eServers{h: h, hits: map[string]int{}}
	s.http = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.http.Close)

	srv := mcp.NewServer(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	for _, name := range []string{"add", "delete_all", "page_oncall"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " done"}}}, nil
			})
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	s.mcp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		toolset := strings.Trim(r.URL.Path, "/")
		s.count(r.Method + " /" + toolset)
		if msg.Method == "tools/call" {
			resource := toolset + "/" + msg.Params.Name
			s.count("tools/call " + resource)
			h.effect(fmt.Sprint(msg.Params.Arguments["node"]), protocol.ActionToolCall, resource)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(s.mcp.Close)
	return s
}

func (s *e2eServers) count(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[key]++
}

func (s *e2eServers) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.hits)
}

// serveHTTP answers /ok, /flaky (500 the first time) and /redirect (to the
// same server under the name localhost: another host to the decider).
func (s *e2eServers) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.h.effect(r.Header.Get("X-Test-Node"), protocol.ActionHTTPRequest, permission.NormalizeHost(r.Host))
	s.count(r.Method + " " + r.URL.Path)
	switch r.URL.Path {
	case "/redirect":
		u, _ := url.Parse(s.http.URL)
		http.Redirect(w, r, "http://localhost:"+u.Port()+"/target", http.StatusFound)
	case "/flaky":
		s.mu.Lock()
		s.flaky++
		first := s.flaky == 1
		s.mu.Unlock()
		if first {
			http.Error(w, "try again", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	default:
		fmt.Fprint(w, "ok")
	}
}

func TestPermissionAuditCompleteness(t *testing.T) {
	const policies = `"toolPolicies":[` +
		`{"match":"calc/delete_*","decision":"deny","reason":"destructive"},` +
		`{"match":"pager/*","decision":"consent","reason":"pages a human"}]`
	const perms = `"permissions":["http:127.0.0.1","tool:calc/*","tool:pager/*"]`
	// nodes is a workflow with every kind of outcome: %[1]s is the HTTP
	// server's URL, %[2]s the page node's tool (literal or templated).
	const nodes = `[
		{"id":"ok","type":"http","with":{"url":"%[1]s/ok","headers":{"X-Test-Node":"ok"}}},
		{"id":"hop","type":"http","onError":"continue","with":{"url":"%[1]s/redirect","headers":{"X-Test-Node":"hop"}}},
		{"id":"flaky","type":"http","retry":{"maxAttempts":2,"backoffMs":1},"with":{"url":"%[1]s/flaky","headers":{"X-Test-Node":"flaky"}}},
		{"id":"add","type":"tool","with":{"toolset":"calc","tool":"add","arguments":{"node":"add"}}},
		{"id":"del","type":"tool","onError":"continue","with":{"toolset":"calc","tool":"delete_all","arguments":{"node":"del"}}},
		{"id":"page","type":"tool","needs":["add"],"onError":"continue","with":{"toolset":"pager","tool":"%[2]s","arguments":{"node":"page"}}}]`
	// runtime allows the loopback server and names the two toolsets.
	const runtime = `"runtime":{"http":{"policy":{"allowPrivateNetwork":true}},"toolsets":[` +
		`{"name":"calc","url":"%[1]s/calc","transport":"streamable-http"},` +
		`{"name":"pager","url":"%[1]s/pager","transport":"streamable-http"}]}`

	tests := []struct {
		name   string
		tool   string // the page node's tool
		extra  string
		status string
		hits   map[string]int // requests that reached a server
		// decided lists some nodes' decisions in order:
		// "action resource decision source".
		decided map[string][]string
		// unused is how many allows no request used (nodes that never ran).
		unused int
	}{
		{
			name:   "allowed, denied and consent without route",
			tool:   "page_oncall",
			extra:  perms + "," + policies,
			status: "completed",
			hits: map[string]int{
				"GET /ok": 1, "GET /redirect": 1, "GET /target": 0, "GET /flaky": 2,
				"tools/call calc/add": 1, "tools/call calc/delete_all": 0, "tools/call pager/page_oncall": 0,
			},
			decided: map[string][]string{
				"hop":   {"http.request 127.0.0.1 allow permissions", "http.request localhost deny permissions"},
				"flaky": {"http.request 127.0.0.1 allow permissions", "http.request 127.0.0.1 allow permissions"},
				"del":   {"tool.call calc/delete_all deny toolPolicy"},
				"page":  {"tool.call pager/page_oncall deny toolPolicy"},
			},
		},
		{
			name:   "a static consent suspends before any request reaches a server",
			tool:   "page_oncall",
			extra:  perms + "," + policies + `,"consentAvailable":true`,
			status: "suspended",
			hits:   map[string]int{},
			decided: map[string][]string{
				"page": {"tool.call pager/page_oncall consent toolPolicy"},
			},
			unused: 4, // ok, hop, flaky, add: preflight allows of nodes that never ran
		},
		{
			name:   "a dynamic consent stops the tool call, not what ran before",
			tool:   "${{ 'page_oncall' }}",
			extra:  perms + "," + policies + `,"consentAvailable":true`,
			status: "suspended",
			hits: map[string]int{
				"tools/call calc/add": 1, "tools/call pager/page_oncall": 0,
			},
			decided: map[string][]string{
				"add":  {"tool.call calc/add allow permissions"},
				"page": {"tool.call pager/page_oncall consent toolPolicy"},
			},
		},
		{
			// A tool named "*" asked for consent as "pager/*", and the grant
			// of what was shown let every pager tool through: it is denied.
			name:   "a tool named * is denied, never asked for",
			tool:   "*",
			extra:  perms + "," + policies + `,"consentAvailable":true`,
			status: "completed",
			hits: map[string]int{
				"GET /ok": 1, "tools/call calc/add": 1, "tools/call pager/*": 0,
			},
			decided: map[string][]string{
				"page": {"tool.call pager/* deny default"},
			},
		},
		{
			name:   "a computed tool name holding * is denied",
			tool:   "${{ 'page_' + '*' }}",
			extra:  perms + "," + policies + `,"consentAvailable":true`,
			status: "completed",
			hits: map[string]int{
				"tools/call calc/add": 1, "tools/call pager/page_*": 0,
			},
			decided: map[string][]string{
				"page": {"tool.call pager/page_* deny default"},
			},
		},
		{
			name:   "a grant lets the call through",
			tool:   "page_oncall",
			extra:  perms + "," + policies + `,"consentAvailable":true,"authorization":{"grants":["tool:pager/page_oncall"]}`,
			status: "completed",
			hits: map[string]int{
				"GET /ok": 1, "GET /redirect": 1, "GET /target": 0, "GET /flaky": 2,
				"tools/call calc/add": 1, "tools/call calc/delete_all": 0, "tools/call pager/page_oncall": 1,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newGateHarness()
			srv := newE2EServers(t, h)
			extra := fmt.Sprintf(runtime, srv.mcp.URL) + "," + tt.extra
			gateRun(t, New(DefaultLimits()), h, gateBody(fmt.Sprintf(nodes, srv.http.URL, tt.tool), extra))
			if unused := gateAudit(t, h); unused != tt.unused {
				t.Errorf("%d allow decisions no request used, want %d", unused, tt.unused)
			}

			if got := gateStatus(h); got != tt.status {
				t.Errorf("status %s, want %s (terminal %+v)", got, tt.status, h.term)
			}
			hits := srv.snapshot()
			for k, want := range tt.hits {
				if hits[k] != want {
					t.Errorf("%q reached the server %d times, want %d", k, hits[k], want)
				}
			}
			if len(tt.hits) == 0 && len(hits) != 0 {
				t.Errorf("requests reached the servers: %v, want none", hits)
			}
			decided := map[string][]string{}
			for _, en := range h.log() {
				if d, ok := en.ev.(*protocol.PermissionDecision); ok {
					decided[d.NodeID] = append(decided[d.NodeID], d.Action+" "+d.Resource+" "+d.Decision+" "+d.Source)
				}
			}
			for node, want := range tt.decided {
				if !slices.Equal(decided[node], want) {
					t.Errorf("decisions of %s: %q, want %q", node, decided[node], want)
				}
			}
		})
	}
}
