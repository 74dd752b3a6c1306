package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runnerd/lambda-runner/protocol"
)

// Hostile replies: a model server or an MCP server answers with more than
// any node could keep — a 200 MB completion, a 200 MB tool result, one SSE
// line that never ends, a tool list that never ends, a hundred 3 MB tool
// results for the agent's conversation. Each is bounded while it is read:
// the node fails in-band with the code naming what was too big, within its
// timeout, and the heap never holds the reply (the peak is measured).
// Helpers are prefixed reads.

// readsMaxPeak is the most the heap may grow during one hostile run: well
// inside a 512 MB function, whose runner rests at about 35 MB.
const readsMaxPeak = 150 << 20

// readsHeap is the heap's objects, as runtime/metrics sees them.
func readsHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// readsPeak runs f and returns the peak growth of the heap above what it
// held before, sampled every half millisecond.
func readsPeak(f func()) uint64 {
	runtime.GC()
	base := readsHeap()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			if h := readsHeap(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// readsFill writes n bytes of 'a' to w in chunks, without holding them,
// and stops when the client is gone.
func readsFill(w io.Writer, n int64) {
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	for n > 0 {
		c := chunk[:min(int64(len(chunk)), n)]
		if _, err := w.Write(c); err != nil {
			return
		}
		n -= int64(len(c))
	}
}

// readsModel is an OpenAI-compatible server whose reply is written by
// reply, n counting the requests from 0.
func readsModel(t *testing.T, reply func(n int, w http.ResponseWriter)) *httptest.Server {
	t.Helper()
	var count atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		reply(int(count.Add(1)-1), w)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// readsHugeCompletion writes a completion whose text is n bytes.
func readsHugeCompletion(w http.ResponseWriter, n int64) {
	_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`)
	readsFill(w, n)
	_, _ = io.WriteString(w, `"}}]}`)
}

// readsMCP is a real MCP server (the SDK's) offering add and big (3 MB of
// text), behind a handler that answers some requests itself: tools/call of
// "huge" with a 200 MB JSON result, of "amp" with amp as structured content
// (when set), of "endless" with one SSE line that never ends, tools/list with pages that never end (when listPage > 0, of
// about listPage bytes), and the session's DELETE never (when hangDelete).
type readsMCP struct {
	*httptest.Server
	// amp, when set, is the structured content of tools/call of "amp".
	amp string
	// list and call, when set, are the result of every tools/list and of
	// tools/call of "amp".
	list, call string
	bigSize    int
	listPage   int
	hangDelete bool
	listed     atomic.Int64
	streamed   atomic.Int64 // bytes written for "endless"
}

func newReadsMCP(t *testing.T, listPage int, hangDelete bool) *readsMCP {
	t.Helper()
	return newReadsMCPBig(t, listPage, hangDelete, 3<<20)
}

// newReadsMCPBig is newReadsMCP whose big tool returns bigSize bytes.
func newReadsMCPBig(t *testing.T, listPage int, hangDelete bool, bigSize int) *readsMCP {
	t.Helper()
	m := &readsMCP{listPage: listPage, hangDelete: hangDelete, bigSize: bigSize}
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add"}, func(_ context.Context, _ *mcp.CallToolRequest, in svcAddIn) (*mcp.CallToolResult, svcAddOut, error) {
		return nil, svcAddOut{Sum: in.A + in.B}, nil
	})
	big := strings.Repeat("b", bigSize)
	mcp.AddTool(srv, &mcp.Tool{Name: "big"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}}, nil, nil
	})
	for _, name := range []string{"huge", "endless", "amp"} {
		mcp.AddTool(srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("answered by the hostile handler")
		})
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete && m.hangDelete {
			<-r.Context().Done()
			return
		}
		if r.Method != http.MethodPost {
			sdk.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		head := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":`
		switch {
		case msg.Method == "tools/list" && m.list != "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, head+m.list+`}`)
			return
		case msg.Method == "tools/call" && msg.Params.Name == "amp" && m.call != "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, head+m.call+`}`)
			return
		case msg.Method == "tools/list" && m.listPage > 0:
			n := m.listed.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `%s{"tools":[{"name":"t%d","inputSchema":{"type":"object"},"description":"`, head, n)
			readsFill(w, int64(m.listPage))
			fmt.Fprintf(w, `"}],"nextCursor":"c%d"}}`, n)
			return
		case msg.Method == "tools/call" && msg.Params.Name == "huge":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, head+`{"content":[{"type":"text","text":"`)
			readsFill(w, 200<<20)
			_, _ = io.WriteString(w, `"}]}}`)
			return
		case msg.Method == "tools/call" && msg.Params.Name == "amp" && m.amp != "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, head+`{"content":[],"structuredContent":{"v":`+m.amp+`}}}`)
			return
		case msg.Method == "tools/call" && msg.Params.Name == "endless":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "id: 1\ndata: "+head+`{"content":[{"type":"text","text":"`)
			cw := &readsCounter{w: w, n: &m.streamed}
			readsFill(cw, 300<<20)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		m.CloseClientConnections()
		m.Close()
	})
	return m
}

type readsCounter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *readsCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (m *readsMCP) toolset() string {
	return fmt.Sprintf(`{"name":"t","url":%q,"timeoutMs":10000}`, m.URL)
}

// TestHostileReads: every reply from outside is bounded while it is read.
func TestHostileReads(t *testing.T) {
	if testing.Short() {
		t.Skip("streams hundreds of megabytes over loopback")
	}
	const timeout = 10 * time.Second
	toolNode := func(tool string) string {
		return `{"nodes":[{"id":"n","type":"tool","timeoutMs":10000,"with":{"toolset":"t","tool":"` + tool + `"}}]}`
	}
	agentNode := `{"nodes":[{"id":"n","type":"agent","timeoutMs":10000,"with":{"prompt":"go","toolsets":["t"],"maxSteps":32}}]}`
	tests := []struct {
		name     string
		model    func(n int, w http.ResponseWriter) // nil: no model
		listPage int                                // the MCP server's endless list pages
		small    bool                               // under -race: a 1 MiB output cap, 900 KiB results
		workflow string
		code     protocol.Code
		message  string
	}{{
		name:     "a 200 MB completion",
		model:    func(_ int, w http.ResponseWriter) { readsHugeCompletion(w, 200<<20) },
		workflow: `{"nodes":[{"id":"n","type":"model","timeoutMs":10000,"with":{"prompt":"hi"}}]}`,
		code:     protocol.CodeOutputTooLarge, message: "model reply exceeds",
	}, {
		name: "a tool call with 200 MB of arguments",
		model: func(_ int, w http.ResponseWriter) {
			_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"t__add","arguments":"`)
			readsFill(w, 200<<20)
			_, _ = io.WriteString(w, `"}}]}}]}`)
		},
		workflow: agentNode,
		code:     protocol.CodeOutputTooLarge, message: "model reply exceeds",
	}, {
		name: "100 tool calls of 3 MB results each",
		model: func(n int, w http.ResponseWriter) {
			if n > 0 {
				_, _ = io.WriteString(w, chatReply("m", "done", 1, 1))
				return
			}
			calls := make([][2]string, 100)
			for i := range calls {
				calls[i] = [2]string{"t__big", "{}"}
			}
			_, _ = io.WriteString(w, toolCallReply(calls...))
		},
		workflow: agentNode, small: raceDetector,
		code: protocol.CodeLimitExceeded, message: "the agent's conversation would hold",
	}, {
		name:     "a 200 MB tools/call JSON result",
		workflow: toolNode("huge"),
		code:     protocol.CodeOutputTooLarge, message: "tool result exceeds",
	}, {
		name:     "a 300 MB SSE line that never ends",
		workflow: toolNode("endless"),
		code:     protocol.CodeOutputTooLarge, message: "tool result exceeds",
	}, {
		name:     "4 MB tools/list pages that never end",
		listPage: 4 << 20,
		workflow: toolNode("add"),
		code:     protocol.CodeOutputTooLarge, message: "tools/list exceeds",
	}, {
		name:     "small tools/list pages that never end",
		listPage: 100,
		workflow: toolNode("add"),
		code:     protocol.CodeLimitExceeded, message: "more pages after 100",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bigSize := 3 << 20
			if tt.small {
				bigSize = 900 << 10
			}
			mcpSrv := newReadsMCPBig(t, tt.listPage, false, bigSize)
			rt := `{"toolsets":[` + mcpSrv.toolset() + `]`
			if tt.model != nil {
				m := readsModel(t, tt.model)
				rt += `,"models":[{"role":"general","provider":"openai","model":"m","apiKey":"sk-x","baseUrl":"` + m.URL + `/v1"}]`
			}
			rt += `}`
			e, _ := svcEngine(t, nil)
			if tt.small {
				e.Limits.MaxOutputBytes = 1 << 20
			}
			x := prepareReq(t, e, svcReq{workflow: tt.workflow, runtime: rt}.String())
			s := &recSink{}
			var took time.Duration
			peak := readsPeak(func() {
				start := time.Now()
				x.Run(t.Context(), s)
				took = time.Since(start)
			})
			t.Logf("peak heap growth %.1f MB, took %v", float64(peak)/(1<<20), took.Round(time.Millisecond))
			s.failure(t)
			f := s.nodeFailed("n")
			if f == nil || f.Error.Code != tt.code || !strings.Contains(f.Error.Message, tt.message) {
				t.Errorf("node.failed = %+v, want %s containing %q", f, tt.code, tt.message)
			}
			if took > timeout+500*time.Millisecond {
				t.Errorf("took %v, want at most the node's timeout + 0.5 s", took)
			}
			if peak > readsMaxPeak {
				t.Errorf("the heap grew by %d MB, want under %d MB", peak>>20, readsMaxPeak>>20)
			}
			if n := mcpSrv.streamed.Load(); n > 64<<20 {
				t.Errorf("the endless event was read for %d MB", n>>20)
			}
		})
	}
}

// TestHostileCloseBounded: a server that never answers the session's
// DELETE holds neither the response nor the process past the reserve.
func TestHostileCloseBounded(t *testing.T) {
	mcpSrv := newReadsMCP(t, 0, true)
	e, _ := svcEngine(t, nil)
	x := prepareReq(t, e, svcReq{
		workflow: `{"nodes":[{"id":"n","type":"tool","with":{"toolset":"t","tool":"add","arguments":{"a":1,"b":2}}}]}`,
		runtime:  `{"toolsets":[` + mcpSrv.toolset() + `]}`,
	}.String())
	s := &recSink{}
	start := time.Now()
	x.Run(t.Context(), s)
	ran := time.Since(start)
	s.result(t)
	e.WaitClosed()
	closed := time.Since(start) - ran
	t.Logf("Run returned %v after it began; the close took %v more", ran.Round(time.Millisecond), closed.Round(time.Millisecond))
	if ran > time.Second {
		t.Errorf("Run took %v: the close held it", ran)
	}
	if reserve := DefaultLimits().Reserve; closed > reserve+200*time.Millisecond {
		t.Errorf("closing took %v, past the reserve of %v", closed, reserve)
	}
}

// TestHostileEchoForwarding: a secret echoed by its own host cannot be
// transformed and forwarded elsewhere, nor can the base64 credential the
// runner built from it: both are scrubbed at the door.
func TestHostileEchoForwarding(t *testing.T) {
	const secret = "fw-s3cret-value-42"
	echo := newSvcEcho(t)
	var seen atomic.Value // the raw query the other host received
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		seen.Store(r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"query":"ok"}`)
	}))
	t.Cleanup(other.Close)
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + secret))
	_, port, _ := strings.Cut(strings.TrimPrefix(other.URL, "http://"), ":")
	wf := `{"nodes":[
		{"id":"a","type":"http","with":{"url":"` + echo.URL + `/a","headers":{"Authorization":"Bearer ${{ secrets.k }}","X-Basic":"Basic ${{ toBase64('user:' + secrets.k) }}"}}},
		{"id":"b","type":"http","needs":["a"],"with":{"url":"http://localhost:` + port + `/b","query":{
			"b64":"${{ toBase64(nodes.a.output.body.headers.Authorization) }}",
			"up":"${{ upper(nodes.a.output.body.headers.Authorization) }}",
			"basic":"${{ nodes.a.output.body.headers['X-Basic'] }}"}}},
		{"id":"c","type":"set","needs":["a"],"with":{"value":"${{ toBase64(nodes.a.output.body.headers.Authorization) }}"}}],
		"output":{"b":"${{ nodes.b.output.body.query }}","c":"${{ nodes.c.output }}","a":"${{ nodes.a.output.body.headers }}"}}`
	stream, logs := secretsRun(t, svcReq{workflow: wf,
		runtime: `{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{"k":{"value":"` + secret + `","hosts":["127.0.0.1"]}}}}`,
		trace:   true}.String(), nil)
	leaks := append(secretsForms(secret), basic, base64.StdEncoding.EncodeToString([]byte("Bearer "+secret)),
		base64.StdEncoding.EncodeToString([]byte(secret)), strings.ToUpper("Bearer "+secret))
	sent, _ := seen.Load().(string)
	for _, form := range leaks {
		if strings.Contains(stream, form) || strings.Contains(logs, form) || strings.Contains(sent, form) {
			t.Errorf("a form of the secret (%q) reached the stream, the logs or the other host", form)
		}
	}
	if !strings.Contains(stream, `"status":"completed"`) {
		t.Fatalf("the execution did not complete:\n%s", stream)
	}
	if got := hits.Load(); got != 1 {
		t.Errorf("the other host got %d requests, want 1", got)
	}
}
