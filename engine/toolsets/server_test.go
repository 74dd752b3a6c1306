package toolsets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runnerd/lambda-runner/protocol"
)

// testServer is a real MCP server, built with the SDK, behind an
// httptest.Server whose middleware records every request.
type testServer struct {
	*httptest.Server
	mcp     *mcp.Server
	opts    mcp.StreamableHTTPOptions
	handler atomic.Pointer[mcp.StreamableHTTPHandler]
	release chan struct{} // closed by unblock: ends the "block" tool
	once    sync.Once

	mu       sync.Mutex
	requests []recorded
}

// recorded is one HTTP request the test server received.
type recorded struct {
	HTTPMethod string // POST, GET, DELETE
	RPCMethod  string // "initialize", "tools/call", ...; empty without a body
	SessionID  string
	Header     http.Header
}

type addIn struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type echoIn struct {
	Text string `json:"text,omitempty"`
}

// newTestServer starts a server offering the tools add, echo, fail, block
// and leak, and shuts it down when the test ends. pageSize 0 means the SDK's
// default; stateless selects the sessionless mode.
func newTestServer(t *testing.T, pageSize int, stateless bool) *testServer {
	t.Helper()
	s := &testServer{release: make(chan struct{})}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1"}, &mcp.ServerOptions{PageSize: pageSize})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("the tool failed on purpose")
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "block", Description: "Blocks until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
			case <-s.release:
			}
			return nil, nil, errors.New("unblocked")
		})
	// leak answers with a JSON-RPC error quoting the credentials it got, as
	// a careless server might.
	s.mcp.AddTool(&mcp.Tool{Name: "leak", Description: "Echoes credentials in errors.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("rejected Authorization %q and key %q",
				req.Extra.Header.Get("Authorization"), req.Extra.Header.Get("X-Api-Key"))
		})
	s.opts = mcp.StreamableHTTPOptions{Stateless: stateless}
	s.restart()

	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.shutdown)
	return s
}

// restart swaps in a new handler, which knows none of the sessions of the
// previous one: to a client, the server restarted.
func (s *testServer) restart() {
	s.handler.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &s.opts))
}

func (s *testServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	s.mu.Lock()
	s.requests = append(s.requests, recorded{r.Method, msg.Method, r.Header.Get("Mcp-Session-Id"), r.Header.Clone()})
	s.mu.Unlock()
	s.handler.Load().ServeHTTP(w, r)
}

// stop makes the server go away: every connection is cut and the port
// refuses new ones.
func (s *testServer) stop() {
	s.CloseClientConnections()
	s.Close()
}

// unblock ends the calls of the "block" tool, now and to come.
func (s *testServer) unblock() {
	s.once.Do(func() { close(s.release) })
}

func (s *testServer) shutdown() {
	s.unblock()
	// Sessions whose client could not say goodbye (the server was gone or
	// restarted) would outlive the test otherwise.
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
	s.stop()
}

// recorded returns a copy of the requests received so far.
func (s *testServer) recorded() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// count returns how many requests carried the JSON-RPC method rpc, or, for
// an HTTP method name (GET, DELETE), how many used it.
func (s *testServer) count(method string) int {
	n := 0
	for _, r := range s.recorded() {
		if r.RPCMethod == method || r.RPCMethod == "" && r.HTTPMethod == method {
			n++
		}
	}
	return n
}

// sessionIDs returns the distinct session ids the server saw.
func (s *testServer) sessionIDs() []string {
	var ids []string
	for _, r := range s.recorded() {
		if r.SessionID != "" && !slices.Contains(ids, r.SessionID) {
			ids = append(ids, r.SessionID)
		}
	}
	return ids
}

// newSet returns a Set of defs that is closed when the test ends.
func newSet(t *testing.T, defs ...protocol.Toolset) *Set {
	t.Helper()
	if err := Validate("runtime.toolsets", defs); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	s := New(defs, Options{})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// asError returns err as an *Error, failing the test if it is not one.
func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T (%v) is not a *toolsets.Error", err, err)
	}
	return e
}

// blockUntil is a server that never answers a request before release is
// closed or the client goes away. It acknowledges notifications, so that
// the client's goodbye (the cancellation of what it gave up on) is quick.
func blockUntil(release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if json.NewDecoder(r.Body).Decode(&msg) == nil && msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
}
