package toolsets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/runnerd/lambda-runner/protocol"
)

func TestTools(t *testing.T) {
	tests := []struct {
		name      string
		pageSize  int
		wantPages int // tools/list requests for the first listing
	}{
		{"one page", 0, 1},
		{"paged", 2, 3}, // five tools, two per page
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestServer(t, tt.pageSize, false)
			set := newSet(t, protocol.Toolset{Name: "math", URL: srv.URL})

			tools, err := set.Tools(t.Context(), "math")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			byName := map[string]Tool{}
			for _, tool := range tools {
				names = append(names, tool.Name)
				byName[tool.Name] = tool
			}
			slices.Sort(names)
			if want := []string{"add", "block", "echo", "fail", "leak"}; !slices.Equal(names, want) {
				t.Fatalf("tools = %v, want %v", names, want)
			}

			add := byName["add"]
			if add.Description != "Adds two integers." {
				t.Errorf("add description = %q", add.Description)
			}
			var in struct {
				Type       string                                        `json:"type"`
				Properties map[string]struct{ Type, Description string } `json:"properties"`
				Required   []string                                      `json:"required"`
			}
			if err := json.Unmarshal(add.InputSchema, &in); err != nil {
				t.Fatalf("add input schema %s: %v", add.InputSchema, err)
			}
			if in.Type != "object" || in.Properties["a"].Type != "integer" || in.Properties["b"].Description != "the second addend" {
				t.Errorf("add input schema = %s", add.InputSchema)
			}
			if !strings.Contains(string(add.OutputSchema), `"sum"`) {
				t.Errorf("add output schema = %s, want one with sum", add.OutputSchema)
			}
			if echo := byName["echo"]; echo.OutputSchema != nil {
				t.Errorf("echo output schema = %s, want none", echo.OutputSchema)
			}
			if got := srv.count("tools/list"); got != tt.wantPages {
				t.Errorf("tools/list requests = %d, want %d", got, tt.wantPages)
			}

			// The list is cached for the session, and callers get copies.
			tools[0].Name = "changed"
			again, err := set.Tools(t.Context(), "math")
			if err != nil {
				t.Fatal(err)
			}
			if got := srv.count("tools/list"); got != tt.wantPages {
				t.Errorf("after a second listing, tools/list requests = %d, want %d", got, tt.wantPages)
			}
			if slices.ContainsFunc(again, func(tool Tool) bool { return tool.Name == "changed" }) {
				t.Error("changing a returned Tool changed the cache")
			}
		})
	}
}

func TestCall(t *testing.T) {
	srv := newTestServer(t, 0, false)
	set := newSet(t, protocol.Toolset{Name: "math", URL: srv.URL})

	tests := []struct {
		tool        string
		args        map[string]any
		wantText    string // in the first content block
		wantStruct  any
		wantIsError bool
	}{
		{"add", map[string]any{"a": 2, "b": 3}, `{"sum":5}`, map[string]any{"sum": float64(5)}, false},
		{"echo", map[string]any{"text": "héllo"}, "héllo", nil, false},
		{"echo", nil, "", nil, false},
		{"fail", nil, "the tool failed on purpose", nil, true},
		// Arguments the input schema refuses are a tool error too.
		{"add", map[string]any{"a": "two"}, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.tool, tt.args), func(t *testing.T) {
			res, err := set.Call(t.Context(), "math", tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.wantIsError {
				t.Errorf("IsError = %v, want %v", res.IsError, tt.wantIsError)
			}
			if !reflect.DeepEqual(res.Structured, tt.wantStruct) {
				t.Errorf("Structured = %#v, want %#v", res.Structured, tt.wantStruct)
			}
			if len(res.Content) != 1 {
				t.Fatalf("Content = %s, want one block", res.Content)
			}
			var block struct{ Type, Text string }
			if err := json.Unmarshal(res.Content[0], &block); err != nil {
				t.Fatal(err)
			}
			if block.Type != "text" || !strings.Contains(block.Text, tt.wantText) {
				t.Errorf("Content[0] = %s, want text containing %q", res.Content[0], tt.wantText)
			}
		})
	}
}

func TestCallUnknownTool(t *testing.T) {
	srv := newTestServer(t, 0, false)
	set := newSet(t, protocol.Toolset{Name: "math", URL: srv.URL})

	_, err := set.Call(t.Context(), "math", "nope", nil)
	e := asError(t, err)
	if e.Toolset != "math" || e.Tool != "nope" || !strings.Contains(e.Message, "nope") {
		t.Errorf("error = %+v", e)
	}
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Errorf("error %v does not unwrap to a *jsonrpc.Error", err)
	}
	// A JSON-RPC error leaves the session usable.
	if _, err := set.Call(t.Context(), "math", "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatalf("call after an unknown tool: %v", err)
	}
	if got := srv.count("initialize"); got != 1 {
		t.Errorf("initialize requests = %d, want 1", got)
	}
}

func TestHeaders(t *testing.T) {
	const (
		auth   = "Bearer tok-3f9a1c77e0"
		apiKey = "key-5b2d88"
		query  = "q-secret-4471"
	)
	srv := newTestServer(t, 0, false)
	set := newSet(t, protocol.Toolset{
		Name:    "secure",
		URL:     srv.URL + "/mcp?token=" + query,
		Headers: map[string]string{"Authorization": auth, "x-api-key": apiKey},
	})
	secrets := []string{auth, "tok-3f9a1c77e0", apiKey, query}
	noSecret := func(t *testing.T, msg string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(msg, s) {
				t.Errorf("message %q contains the secret %q", msg, s)
			}
		}
	}

	if _, err := set.Tools(t.Context(), "secure"); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Call(t.Context(), "secure", "add", map[string]any{"a": 1, "b": 2}); err != nil {
		t.Fatal(err)
	}

	// The server quotes the credentials in its error: they must not get
	// through, neither in the message nor in the unwrapped JSON-RPC error.
	_, err := set.Call(t.Context(), "secure", "leak", nil)
	e := asError(t, err)
	noSecret(t, err.Error())
	if !strings.Contains(e.Message, "[REDACTED]") {
		t.Errorf("message %q shows no redaction: did the server not echo the header?", e.Message)
	}
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Fatalf("error %v does not unwrap to a *jsonrpc.Error", err)
	}
	noSecret(t, je.Message)

	// Once the server is gone, transport errors quote the URL.
	srv.stop()
	_, err = set.Call(t.Context(), "secure", "add", map[string]any{"a": 1, "b": 2})
	asError(t, err)
	noSecret(t, err.Error())
	if err := set.Close(); err != nil {
		noSecret(t, err.Error())
	}

	got := srv.recorded()
	if len(got) < 5 { // discover, initialize, initialized, tools/list, tools/call...
		t.Fatalf("only %d requests recorded", len(got))
	}
	for _, r := range got {
		if r.Header.Get("Authorization") != auth || r.Header.Get("X-Api-Key") != apiKey {
			t.Errorf("%s %q: Authorization %q, X-Api-Key %q", r.HTTPMethod, r.RPCMethod,
				r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		}
	}
}

func TestLazy(t *testing.T) {
	used := newTestServer(t, 0, false)
	unused := newTestServer(t, 0, false)
	set := newSet(t,
		protocol.Toolset{Name: "used", URL: used.URL},
		protocol.Toolset{Name: "unused", URL: unused.URL},
	)
	if !set.Has("used") || !set.Has("unused") || set.Has("other") {
		t.Fatal("Has does not match the definitions")
	}
	if n := len(used.recorded()) + len(unused.recorded()); n != 0 {
		t.Fatalf("%d requests before any use", n)
	}

	if _, err := set.Call(t.Context(), "used", "add", map[string]any{"a": 1, "b": 2}); err != nil {
		t.Fatal(err)
	}
	if len(used.recorded()) == 0 {
		t.Error("no request to the toolset in use")
	}
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(unused.recorded()); n != 0 {
		t.Errorf("%d requests to a toolset never used", n)
	}
}

func TestReuse(t *testing.T) {
	tests := []struct {
		name       string
		concurrent int // goroutines making the first use together
	}{
		{"sequential", 1},
		{"concurrent first use", 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestServer(t, 0, false)
			set := newSet(t, protocol.Toolset{Name: "math", URL: srv.URL})

			var wg sync.WaitGroup
			errs := make(chan error, tt.concurrent*5)
			for g := range tt.concurrent {
				wg.Go(func() {
					for i := range 5 {
						res, err := set.Call(context.Background(), "math", "add", map[string]any{"a": g, "b": i})
						if err != nil {
							errs <- err
							return
						}
						if want := map[string]any{"sum": float64(g + i)}; !reflect.DeepEqual(res.Structured, want) {
							errs <- fmt.Errorf("add(%d, %d) = %v", g, i, res.Structured)
						}
					}
					if _, err := set.Tools(context.Background(), "math"); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}

			if got := srv.count("tools/call"); got != tt.concurrent*5 {
				t.Errorf("tools/call requests = %d, want %d", got, tt.concurrent*5)
			}
			if got := srv.count("initialize"); got != 1 {
				t.Errorf("initialize requests = %d, want 1", got)
			}
			if ids := srv.sessionIDs(); len(ids) != 1 {
				t.Errorf("session ids = %v, want exactly one", ids)
			}
			if err := set.Close(); err != nil {
				t.Fatal(err)
			}
			if got := srv.count("DELETE"); got != 1 {
				t.Errorf("DELETE requests = %d, want 1 (the session's end)", got)
			}
		})
	}
}

// TestStateless covers servers of the 2026-07-28 protocol, which have no
// session and are found with server/discover instead of initialize.
func TestStateless(t *testing.T) {
	srv := newTestServer(t, 0, true)
	set := newSet(t, protocol.Toolset{Name: "math", URL: srv.URL})
	if _, err := set.Tools(t.Context(), "math"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, err := set.Call(t.Context(), "math", "add", map[string]any{"a": i, "b": 1})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]any{"sum": float64(i + 1)}; !reflect.DeepEqual(res.Structured, want) {
			t.Errorf("Structured = %v, want %v", res.Structured, want)
		}
	}
	if got := srv.count("server/discover"); got != 1 {
		t.Errorf("server/discover requests = %d, want 1", got)
	}
	if got := srv.count("initialize"); got != 0 {
		t.Errorf("initialize requests = %d, want 0", got)
	}
}

// Callers listing a toolset at once share one listing: the server is asked
// for its tools once, not once per caller, and every caller gets them.
func TestToolsListedOnceAtOnce(t *testing.T) {
	srv := newTestServer(t, 2, false)
	set := newSet(t, protocol.Toolset{Name: "math", URL: srv.URL})
	var wg sync.WaitGroup
	lens := make([]int, 16)
	for i := range lens {
		wg.Go(func() {
			tools, err := set.Tools(context.Background(), "math")
			if err != nil {
				t.Errorf("Tools: %v", err)
			}
			lens[i] = len(tools)
		})
	}
	wg.Wait()
	for i, n := range lens {
		if n != lens[0] || n == 0 {
			t.Errorf("caller %d got %d tools, caller 0 %d", i, n, lens[0])
		}
	}
	if pages := (lens[0] + 1) / 2; srv.count("tools/list") != pages {
		t.Errorf("the server was asked for %d pages, want %d (one listing)", srv.count("tools/list"), pages)
	}
}
