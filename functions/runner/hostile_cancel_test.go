package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// Hostile cancellation, end to end through the real handler over TCP: an
// execution with 16 in-flight MCP tool calls (a map), an OpenAI and an
// Anthropic model call and two http requests, every one of them to a local
// server that hangs until its request ends. A client disconnect, the
// execution deadline and a node timeoutMs must each end every one of them
// on the server side promptly, with exactly one terminal event (when there
// is still a client to read it), nothing started or sent after it, and no
// goroutine left behind. Helpers are prefixed cancel.

const (
	cancelTools  = 16
	cancelModels = 2 // one OpenAI, one Anthropic
	cancelHTTP   = 2
	cancelAll    = cancelTools + cancelModels + cancelHTTP

	// cancelTimeoutMs is the toolset and http timeoutMs: past the 5 s the
	// test allows after each cause (the latest, the deadline, comes at
	// 2.5 s), so only the cancellation under test can end the calls in
	// time, yet short, so that a failure costs seconds, not minutes.
	cancelTimeoutMs = 10_000
	// cancelHang is how long a server handler waits for its request to
	// end: past cancelTimeoutMs.
	cancelHang = 15 * time.Second
)

// cancelUpstreams are the hanging servers and what they saw.
type cancelUpstreams struct {
	inflight atomic.Int32 // handlers still waiting
	total    atomic.Int32 // requests or tool calls ever received
	servers  []*httptest.Server
	mcp      *mcp.Server
	mcpURL   string
	openai   string
	anthro   string
	hang     string
}

func cancelStartUpstreams(t *testing.T) *cancelUpstreams {
	t.Helper()
	u := &cancelUpstreams{}
	// wait blocks until ctx ends, or cancelHang: past every bound under
	// test, yet short, so that a failure costs seconds.
	wait := func(ctx context.Context) {
		u.total.Add(1)
		u.inflight.Add(1)
		defer u.inflight.Add(-1)
		select {
		case <-ctx.Done():
		case <-time.After(cancelHang):
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "blocker", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Blocks until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			wait(ctx)
			return &mcp.CallToolResult{}, nil, nil
		})
	start := func(h http.Handler) string {
		s := httptest.NewServer(h)
		u.servers = append(u.servers, s)
		return s.URL
	}
	u.mcp = srv
	u.mcpURL = start(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	// The model servers accept the request of the documented wire format
	// (POST /v1/chat/completions, POST /v1/messages) and never answer.
	modelServer := func(path string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != path {
				http.NotFound(w, r)
				return
			}
			_, _ = io.Copy(io.Discard, r.Body)
			wait(r.Context())
		})
	}
	u.openai = start(modelServer("/v1/chat/completions")) + "/v1"
	u.anthro = start(modelServer("/v1/messages"))
	u.hang = start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { wait(r.Context()) })) + "/hang"
	return u
}

func (u *cancelUpstreams) close() {
	for _, s := range u.servers {
		s.CloseClientConnections()
		s.Close()
	}
}

// cancelWorkflow is the execution: every call starts at once; "after" needs
// them all, so it must never start. nodeTimeout 0 leaves timeoutMs out.
func cancelWorkflow(u *cancelUpstreams, nodeTimeout int) string {
	to := ""
	if nodeTimeout > 0 {
		to = `,"timeoutMs":` + itoa(nodeTimeout)
	}
	items := make([]string, cancelTools)
	for i := range items {
		items[i] = itoa(i)
	}
	return `{"version":1,"workflow":{"nodes":[
		{"id":"tools","type":"map","with":{"items":[` + strings.Join(items, ",") + `],"concurrency":` + itoa(cancelTools) + `,
			"nodes":[{"id":"t","type":"tool","with":{"toolset":"b","tool":"wait","arguments":{}}` + to + `}]}},
		{"id":"oa","type":"model","with":{"role":"oa","prompt":"hi"}` + to + `},
		{"id":"an","type":"model","with":{"role":"an","prompt":"hi"}` + to + `},
		{"id":"h1","type":"http","with":{"url":"` + u.hang + `?n=1"}` + to + `},
		{"id":"h2","type":"http","with":{"url":"` + u.hang + `?n=2"}` + to + `},
		{"id":"after","type":"set","needs":["tools","oa","an","h1","h2"],"with":{"value":1}}]},
	"runtime":{
		"toolsets":[{"name":"b","url":"` + u.mcpURL + `","timeoutMs":` + itoa(cancelTimeoutMs) + `}],
		"models":[{"role":"oa","provider":"openai","model":"m","apiKey":"k","baseUrl":"` + u.openai + `"},
		          {"role":"an","provider":"anthropic","model":"m","apiKey":"k","baseUrl":"` + u.anthro + `"}],
		"http":{"policy":{"allowPrivateNetwork":true,"timeoutMs":` + itoa(cancelTimeoutMs) + `}}},
	"toolPolicies":[{"match":"b/*","decision":"allow"}]}`
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// cancelEvent is one line of the stream and when it arrived.
type cancelEvent struct {
	Type string `json:"type"`
	Node string `json:"nodeId"`
	at   time.Time
	raw  string
}

func TestHostileCancelEndToEnd(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		nodeTO     int           // node timeoutMs, 0 for none
		disconnect bool          // the client leaves once every call is in flight
		cause      time.Duration // when the deadline or timeout fires, after the request starts
	}{
		{name: "client disconnect", disconnect: true},
		{name: "execution deadline", env: map[string]string{"RUNNER_TIMEOUT_SECONDS": "3", "RUNNER_RESERVE_MS": "500"}, cause: 2500 * time.Millisecond},
		{name: "node timeoutMs", nodeTO: 2000, cause: 2000 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cancelRun(t, tt.env, tt.nodeTO, tt.disconnect, tt.cause)
		})
	}
}

func cancelRun(t *testing.T, extraEnv map[string]string, nodeTO int, disconnect bool, cause time.Duration) {
	baseline := goleak.IgnoreCurrent()
	u := cancelStartUpstreams(t)
	env := map[string]string{"RUNNER_TOKENS": egressToken, "RUNNER_HTTP_ALLOW_CIDRS": "127.0.0.1/32", "RUNNER_MAX_CONCURRENCY": "64"}
	for k, v := range extraEnv {
		env[k] = v
	}
	cfg := testConfig(t, env)
	var logs syncLog
	h, err := newHandler(context.Background(), cfg, staticSource(t, cfg), slog.New(slog.NewJSONHandler(&logs, nil)), io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	runner := httptest.NewServer(h)
	client := &http.Client{Transport: &http.Transport{}}
	defer func() {
		client.CloseIdleConnections()
		runner.CloseClientConnections()
		runner.Close()
		u.close()
		// Every goroutine the execution, the adapters and the servers
		// started has ended (goleak retries for a while).
		goleak.VerifyNone(t, baseline)
	}()

	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	req, _ := http.NewRequestWithContext(ctx, "POST", runner.URL+"/v1/executions", strings.NewReader(cancelWorkflow(u, nodeTO)))
	req.Header.Set("Authorization", "Bearer "+egressToken)
	req.Header.Set("Content-Type", "application/json")
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var (
		mu     sync.Mutex
		events []cancelEvent
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e cancelEvent
			_ = json.Unmarshal(sc.Bytes(), &e)
			e.at, e.raw = time.Now(), sc.Text()
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}
	}()

	// Every call reaches its server before anything ends it.
	for deadline := time.Now().Add(10 * time.Second); u.inflight.Load() < cancelAll; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) || (cause > 0 && time.Since(began) > cause) {
			t.Fatalf("only %d of %d calls in flight after %v", u.inflight.Load(), cancelAll, time.Since(began))
		}
	}
	var trigger time.Time
	if disconnect {
		leave()
		trigger = time.Now()
	} else {
		trigger = began.Add(cause)
	}
	// Every server-side handler sees the cancellation promptly.
	for u.inflight.Load() > 0 {
		if time.Since(trigger) > 5*time.Second {
			t.Fatalf("%d calls still running %v after the cancellation", u.inflight.Load(), time.Since(trigger))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Since(trigger); d > time.Second {
		t.Errorf("the servers saw the cancellation %v after it, want ≤ 1s", d)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end")
	}
	// The execution closed every MCP session it opened.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		open := 0
		for range u.mcp.Sessions() {
			open++
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d MCP sessions still open 5s after the end of the stream", open)
		}
	}
	// Nothing is sent after the end: the servers' counters stay put.
	total := u.total.Load()
	time.Sleep(300 * time.Millisecond)
	if n := u.total.Load(); n != total || n != cancelAll {
		t.Errorf("the servers received %d calls, then %d; want %d, none after the end", total, n, cancelAll)
	}
	if !disconnect {
		cancelCheckStream(t, events, trigger)
	}
	// The runner serves the next request.
	next, _ := http.NewRequest("POST", runner.URL+"/v1/executions", strings.NewReader(`{"version":1,"workflow":{"nodes":[{"id":"s","type":"set","with":{"value":1}}]}}`))
	next.Header.Set("Authorization", "Bearer "+egressToken)
	if r, err := client.Do(next); err != nil {
		t.Errorf("next request: %v", err)
	} else {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if !strings.Contains(string(b), `"status":"completed"`) {
			t.Errorf("next request not served:\n%s", b)
		}
	}
	if l := logs.String(); strings.Contains(l, "panic") {
		t.Errorf("a panic was logged:\n%s", l)
	}
}

// cancelCheckStream asserts exactly one terminal event, arriving promptly
// after the cause, as the stream's last line, with no node started after
// the cause.
func cancelCheckStream(t *testing.T, events []cancelEvent, trigger time.Time) {
	t.Helper()
	var all strings.Builder
	terminals := 0
	for i, e := range events {
		all.WriteString(e.raw + "\n")
		switch e.Type {
		case "result", "error":
			terminals++
			if i != len(events)-1 {
				t.Errorf("events after the terminal event")
			}
			if d := e.at.Sub(trigger); d > time.Second {
				t.Errorf("the terminal event came %v after the cause", d)
			}
		case "node.started":
			if e.Node == "after" || e.at.After(trigger) {
				t.Errorf("node %s started after the cause", e.Node)
			}
		}
	}
	if terminals != 1 || !strings.Contains(all.String(), `"type":"error"`) {
		t.Errorf("%d terminal events, want one error:\n%s", terminals, all.String())
	}
}

// syncLog is a log buffer safe for concurrent writes.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
