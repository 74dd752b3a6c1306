package functions_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/infra/tokens"
	"github.com/runnerd/lambda-runner/protocol"
)

// These tests hold the handler to every sentence of the Runner protocol v1
// seed (/work/shared/seeds/runner-protocol.txt) and to DESIGN.md §2. Tests
// of the stream use a real HTTP server on 127.0.0.1 and read the body as a
// client would, line by line.

const goodToken = "tok_good"

// patience bounds every wait on the handler; reaching it fails the test
// instead of hanging it.
const patience = 30 * time.Second

// minimalBody is the smallest valid execution request.
const minimalBody = `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`

// kindFunc is a node type run by a function of the test.
type kindFunc func(ctx context.Context, call *engine.Call) (any, error)

func (k kindFunc) Prepare(c *engine.Compiler) engine.Step {
	c.With()
	return engine.StepFunc(k)
}

// newHandler is the handler as the runner wires it: the default engine, the
// given extra node types and one static token.
func newHandler(t testing.TB, kinds map[string]engine.Kind) *functions.Handler {
	t.Helper()
	eng := engine.New(engine.DefaultLimits())
	for name, k := range kinds {
		eng.Register(name, k)
	}
	return &functions.Handler{
		Tokens: tokens.Static{Set: tokens.NewSet(goodToken)},
		Engine: eng,
		Capabilities: protocol.Capabilities{
			Version:          protocol.Version,
			ProtocolVersions: []int{protocol.Version},
			Runner:           protocol.RunnerInfo{Name: "test", Version: "0"},
			NodeTypes:        eng.NodeTypes(),
			Streaming:        protocol.Streaming{ContentType: protocol.ContentTypeNDJSON},
		},
	}
}

// countingBody is a request body that records whether it was read.
type countingBody struct {
	r     io.Reader
	reads atomic.Int32
}

func newCountingBody(s string) *countingBody { return &countingBody{r: strings.NewReader(s)} }

func (b *countingBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	return b.r.Read(p)
}

func (b *countingBody) Close() error { return nil }

// serve runs one request in process. auth is the Authorization header ("" for
// none).
func serve(h http.Handler, method, path, auth string, body io.Reader) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, body)
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// errorBody checks that rec is a JSON error response with status and code,
// and returns its body.
func errorBody(t *testing.T, rec *httptest.ResponseRecorder, status int, code protocol.Code) protocol.ErrorResponse {
	t.Helper()
	if rec.Code != status {
		t.Errorf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != protocol.ContentTypeJSON {
		t.Errorf("Content-Type = %q, want %s", ct, protocol.ContentTypeJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	var resp protocol.ErrorResponse
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("error body %q: %v", rec.Body, err)
	}
	if dec.More() {
		t.Errorf("error body holds more than one JSON value: %q", rec.Body)
	}
	if resp.Version != protocol.Version || resp.Error.Code != code || resp.Error.Message == "" {
		t.Errorf("error body = %+v, want version 1, code %s and a message", resp, code)
	}
	return resp
}

// event is one NDJSON line as a client decodes it.
type event struct {
	Version     int                      `json:"version"`
	Type        string                   `json:"type"`
	ExecutionID string                   `json:"executionId"`
	At          string                   `json:"at"`
	NodeID      string                   `json:"nodeId"`
	Input       json.RawMessage          `json:"input"`
	Status      protocol.ExecutionStatus `json:"status"`
	Output      json.RawMessage          `json:"output"`
	Error       struct {
		Code    protocol.Code `json:"code"`
		Message string        `json:"message"`
		NodeID  string        `json:"nodeId"`
	} `json:"error"`
	line string
}

func parseEvent(t *testing.T, line []byte) event {
	t.Helper()
	var e event
	if err := json.Unmarshal(line, &e); err != nil {
		t.Fatalf("event line %q: %v", line, err)
	}
	e.line = string(line)
	return e
}

// parseStream splits an NDJSON body into events; every line must end with a
// newline.
func parseStream(t *testing.T, body []byte) []event {
	t.Helper()
	if len(body) > 0 && body[len(body)-1] != '\n' {
		t.Errorf("stream does not end with a newline: %q", body)
	}
	var evs []event
	for _, line := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
		evs = append(evs, parseEvent(t, line))
	}
	return evs
}

func isTerminal(typ string) bool { return typ == protocol.TypeResult || typ == protocol.TypeError }

// checkStream checks what every stream must be: accepted first with a
// runner-generated UUIDv7, version 1 and that execution id on every event, a
// time on each, and exactly one terminal event, last. It returns the
// terminal event.
func checkStream(t *testing.T, evs []event) event {
	t.Helper()
	if len(evs) < 2 {
		t.Fatalf("%d events, want at least accepted and a terminal event", len(evs))
	}
	if evs[0].Type != protocol.TypeAccepted {
		t.Fatalf("first event is %q, want accepted", evs[0].line)
	}
	id, err := uuid.Parse(evs[0].ExecutionID)
	if err != nil || id.Version() != 7 {
		t.Errorf("executionId %q is not a UUIDv7 (err %v)", evs[0].ExecutionID, err)
	}
	terminals := 0
	for i, e := range evs {
		if e.Version != protocol.Version {
			t.Errorf("event %d has version %d: %s", i, e.Version, e.line)
		}
		if e.ExecutionID != evs[0].ExecutionID {
			t.Errorf("event %d has executionId %q, accepted had %q", i, e.ExecutionID, evs[0].ExecutionID)
		}
		if at, err := time.Parse(time.RFC3339Nano, e.At); err != nil || at.Location() != time.UTC {
			t.Errorf("event %d: at %q is not an RFC 3339 UTC time", i, e.At)
		}
		if e.Type == protocol.TypeAccepted && i > 0 {
			t.Errorf("a second accepted event at %d", i)
		}
		if isTerminal(e.Type) {
			terminals++
			if i != len(evs)-1 {
				t.Errorf("terminal event %d is followed by %d more", i, len(evs)-1-i)
			}
		}
	}
	if terminals != 1 {
		t.Fatalf("%d terminal events, want exactly 1", terminals)
	}
	return evs[len(evs)-1]
}

// startServer serves h on 127.0.0.1 for the test.
func startServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// post starts an execution on srv with the good token. The request, its
// body included, gives up after patience: a handler that never answers, or
// never ends its stream, fails the test instead of hanging it.
func post(t *testing.T, srv *httptest.Server, body string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+protocol.PathExecutions, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+goodToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status = %d, want 200; body %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != protocol.ContentTypeNDJSON {
		t.Errorf("Content-Type = %q, want %s", ct, protocol.ContentTypeNDJSON)
	}
	return resp
}

// readLine reads one event off a live stream.
func readLine(t *testing.T, br *bufio.Reader) event {
	t.Helper()
	line, err := br.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading an event: %v (read %q)", err, line)
	}
	return parseEvent(t, bytes.TrimSuffix(line, []byte("\n")))
}

// readRest reads a stream to its end, which the server must close.
func readRest(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading the stream to its end: %v (read %q)", err, b)
	}
	return b
}

func TestUnauthorized(t *testing.T) {
	auths := []struct{ name, header string }{
		{"missing", ""},
		{"basic", "Basic dXNlcjpwYXNz"},
		{"basic with the token", "Basic " + goodToken},
		{"bearer without a token", "Bearer"},
		{"bearer with an empty token", "Bearer "},
		{"bearer with blanks", "Bearer    "},
		{"unknown token", "Bearer tok_wrong"},
		{"token prefix", "Bearer tok_goo"},
		{"token and more", "Bearer " + goodToken + " extra"},
		{"no space after the scheme", "Bearer" + goodToken},
		{"other scheme", "Token " + goodToken},
	}
	routes := []struct{ method, path string }{
		{http.MethodGet, protocol.PathCapabilities},
		{http.MethodPost, protocol.PathExecutions},
		// Authentication comes before routing: an unknown path tells a
		// stranger nothing.
		{http.MethodGet, "/v1/other"},
	}
	h := newHandler(t, nil)
	for _, a := range auths {
		for _, rt := range routes {
			t.Run(a.name+" "+rt.method+" "+rt.path, func(t *testing.T) {
				body := newCountingBody(minimalBody)
				rec := serve(h, rt.method, rt.path, a.header, body)
				errorBody(t, rec, http.StatusUnauthorized, protocol.CodeUnauthorized)
				if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", got)
				}
				if n := body.reads.Load(); n != 0 {
					t.Errorf("the body was read %d times before authentication", n)
				}
			})
		}
	}
}

func TestAuthorized(t *testing.T) {
	h := newHandler(t, nil)
	for _, header := range []string{"Bearer " + goodToken, "bearer " + goodToken, "BEARER " + goodToken, "Bearer  " + goodToken} {
		t.Run(header, func(t *testing.T) {
			rec := serve(h, http.MethodGet, protocol.PathCapabilities, header, nil)
			if rec.Code != http.StatusOK {
				t.Errorf("status = %d, want 200; body %s", rec.Code, rec.Body)
			}
		})
	}
}

// tokenSource is a TokenSource of the test.
type tokenSource func(ctx context.Context, token string) error

func (f tokenSource) Verify(ctx context.Context, token string) error { return f(ctx, token) }

func TestTokenSourceUnavailable(t *testing.T) {
	sources := []struct {
		name string
		src  functions.TokenSource
	}{
		{"secrets manager down", tokenSource(func(context.Context, string) error {
			return fmt.Errorf("GetSecretValue: connection refused: %w", tokens.ErrUnavailable)
		})},
		{"no token source", nil},
	}
	for _, s := range sources {
		for _, rt := range []struct{ method, path string }{
			{http.MethodGet, protocol.PathCapabilities},
			{http.MethodPost, protocol.PathExecutions},
		} {
			t.Run(s.name+" "+rt.path, func(t *testing.T) {
				h := newHandler(t, nil)
				h.Tokens = s.src
				body := newCountingBody(minimalBody)
				rec := serve(h, rt.method, rt.path, "Bearer "+goodToken, body)
				// Fail closed: neither served nor a 401 that would make a
				// server drop a good token.
				errorBody(t, rec, http.StatusServiceUnavailable, protocol.CodeUnavailable)
				if rec.Header().Get("Retry-After") == "" {
					t.Error("no Retry-After on a 503")
				}
				if n := body.reads.Load(); n != 0 {
					t.Errorf("the body was read %d times before authentication", n)
				}
			})
		}
	}
}

func TestTokenSourceSeesTheToken(t *testing.T) {
	var got []string
	h := newHandler(t, nil)
	h.Tokens = tokenSource(func(_ context.Context, token string) error {
		got = append(got, token)
		if token != "rotated" {
			return tokens.ErrUnknown
		}
		return nil
	})
	if rec := serve(h, http.MethodGet, protocol.PathCapabilities, "Bearer rotated", nil); rec.Code != http.StatusOK {
		t.Errorf("status = %d, want 200", rec.Code)
	}
	errorBody(t, serve(h, http.MethodGet, protocol.PathCapabilities, "Bearer stale", nil), http.StatusUnauthorized, protocol.CodeUnauthorized)
	if strings.Join(got, ",") != "rotated,stale" {
		t.Errorf("Verify saw %q, want the bare tokens rotated and stale", got)
	}
}

func TestCapabilities(t *testing.T) {
	h := newHandler(t, nil)
	rec := serve(h, http.MethodGet, protocol.PathCapabilities, "Bearer "+goodToken, nil)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != protocol.ContentTypeJSON {
		t.Fatalf("status %d, Content-Type %q; want 200 JSON", rec.Code, rec.Header().Get("Content-Type"))
	}
	want, _ := json.Marshal(h.Capabilities)
	if got := bytes.TrimSpace(rec.Body.Bytes()); !bytes.Equal(got, want) {
		t.Errorf("capabilities = %s, want %s", got, want)
	}
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		code         protocol.Code
		allow        string
	}{
		{http.MethodGet, "/v1/other", http.StatusNotFound, protocol.CodeNotFound, ""},
		{http.MethodPost, "/", http.StatusNotFound, protocol.CodeNotFound, ""},
		{http.MethodGet, "/v2/executions", http.StatusNotFound, protocol.CodeNotFound, ""},
		{http.MethodGet, protocol.PathExecutions, http.StatusMethodNotAllowed, protocol.CodeMethodNotAllowed, "POST"},
		{http.MethodPut, protocol.PathExecutions, http.StatusMethodNotAllowed, protocol.CodeMethodNotAllowed, "POST"},
		{http.MethodPost, protocol.PathCapabilities, http.StatusMethodNotAllowed, protocol.CodeMethodNotAllowed, "GET, HEAD"},
		{http.MethodDelete, protocol.PathCapabilities, http.StatusMethodNotAllowed, protocol.CodeMethodNotAllowed, "GET, HEAD"},
	}
	h := newHandler(t, nil)
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			body := newCountingBody(minimalBody)
			rec := serve(h, tt.method, tt.path, "Bearer "+goodToken, body)
			errorBody(t, rec, tt.status, tt.code)
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
			if n := body.reads.Load(); n != 0 {
				t.Errorf("the body of a refused route was read %d times", n)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	const limit = 256
	pad := func(n int) string {
		// Spaces inside the JSON object keep the request valid.
		return minimalBody[:len(minimalBody)-1] + strings.Repeat(" ", n-len(minimalBody)) + "}"
	}
	h := newHandler(t, nil)
	h.MaxRequestBytes = limit

	rec := serve(h, http.MethodPost, protocol.PathExecutions, "Bearer "+goodToken, strings.NewReader(pad(limit+1)))
	resp := errorBody(t, rec, http.StatusRequestEntityTooLarge, protocol.CodeInvalidExecution)
	if !strings.Contains(resp.Error.Message, fmt.Sprint(limit)) {
		t.Errorf("message %q does not state the limit", resp.Error.Message)
	}
	if strings.Contains(rec.Body.String(), protocol.TypeAccepted) {
		t.Error("a refused request was accepted")
	}

	rec = serve(h, http.MethodPost, protocol.PathExecutions, "Bearer "+goodToken, strings.NewReader(pad(limit)))
	if rec.Code != http.StatusOK {
		t.Errorf("a body of exactly the limit: status %d, want 200; body %s", rec.Code, rec.Body)
	}
}

func TestInvalidBeforeAcceptance(t *testing.T) {
	tests := []struct {
		name, body, path string
	}{
		{"unsupported version", `{"version":2,"workflow":{"nodes":[]}}`, "version"},
		{"version as a string", `{"version":"1","workflow":{"nodes":[]}}`, "version"},
		{"no version", `{"workflow":{"nodes":[]}}`, "version"},
		{"not JSON", `{"version":1,`, ""},
		{"not an object", `[1]`, ""},
		{"no workflow", `{"version":1}`, "workflow"},
		{"cycle", `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","needs":["b"]},{"id":"b","type":"set","needs":["a"]}]}}`, "workflow.nodes[0].needs"},
		{"unknown need", `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","needs":["ghost"]}]}}`, "workflow.nodes[1].needs[0]"},
		{"bad expression", `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":"${{ 1 + }}"}}]}}`, "workflow.nodes[0].with.value"},
		{"unknown name", `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":"${{ env.HOME }}"}}]}}`, "workflow.nodes[0].with.value"},
		{"stateless node", `{"version":1,"workflow":{"nodes":[{"id":"w","type":"wait"}]}}`, "workflow.nodes[0].type"},
		{"input mismatch", `{"version":1,"workflow":{"input":{"type":"object","required":["name"]},"nodes":[]},"input":{}}`, "input"},
	}
	h := newHandler(t, nil)
	h.OnExecution = func(context.Context, protocol.Summary) { t.Error("an invalid request ran") }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(h, http.MethodPost, protocol.PathExecutions, "Bearer "+goodToken, strings.NewReader(tt.body))
			resp := errorBody(t, rec, http.StatusBadRequest, protocol.CodeInvalidExecution)
			found := false
			for _, d := range resp.Error.Details {
				found = found || d.Path == tt.path && d.Message != ""
			}
			if !found {
				t.Errorf("no detail at path %q: %+v", tt.path, resp.Error.Details)
			}
			if strings.Contains(rec.Body.String(), `"type":"accepted"`) {
				t.Error("an invalid request got an accepted event")
			}
		})
	}
}

func TestPanicBeforeAcceptance(t *testing.T) {
	h := newHandler(t, map[string]engine.Kind{"broken": panicPrepare{}})
	rec := serve(h, http.MethodPost, protocol.PathExecutions, "Bearer "+goodToken,
		strings.NewReader(`{"version":1,"workflow":{"nodes":[{"id":"b","type":"broken"}]}}`))
	errorBody(t, rec, http.StatusInternalServerError, protocol.CodeInternal)
}

// panicPrepare is a node type whose Prepare panics.
type panicPrepare struct{}

func (panicPrepare) Prepare(*engine.Compiler) engine.Step { panic("prepare exploded") }

func TestStream(t *testing.T) {
	body, err := os.ReadFile("../examples/hello.json")
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, nil)
	summaries := make(chan protocol.Summary, 1)
	h.OnExecution = func(_ context.Context, s protocol.Summary) { summaries <- s }
	srv := startServer(t, h)

	resp := post(t, srv, string(body))
	evs := parseStream(t, readRest(t, resp.Body))
	term := checkStream(t, evs)
	if term.Type != protocol.TypeResult || term.Status != protocol.StatusCompleted {
		t.Fatalf("terminal event %s, want a completed result", term.line)
	}
	var out any
	_ = json.Unmarshal(term.Output, &out)
	if got, _ := json.Marshal(out); string(got) != `{"greeting":"HELLO, ADA!","length":11}` {
		t.Errorf("output = %s", got)
	}
	// hello.json asks for a trace: node events carry their input.
	started := 0
	for _, e := range evs {
		if e.Type == protocol.TypeNodeStarted {
			started++
			if len(e.Input) == 0 {
				t.Errorf("traced node.started without input: %s", e.line)
			}
		}
	}
	if started != 3 {
		t.Errorf("%d node.started events, want 3", started)
	}
	select {
	case s := <-summaries:
		if s.ExecutionID != evs[0].ExecutionID || s.Status != protocol.StatusCompleted {
			t.Errorf("OnExecution got %+v, want execution %s completed", s, evs[0].ExecutionID)
		}
	case <-time.After(patience):
		t.Error("OnExecution was not called")
	}

	// Every execution gets an id of its own.
	again := parseStream(t, readRest(t, post(t, srv, string(body)).Body))
	if checkStream(t, again); again[0].ExecutionID == evs[0].ExecutionID {
		t.Errorf("two executions share the id %s", evs[0].ExecutionID)
	}
}

func TestAcceptedIsFlushedBeforeEngineWork(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	h := newHandler(t, map[string]engine.Kind{
		// gate holds the execution until the test has read accepted: if
		// accepted were buffered with later events, it would never come.
		"gate": kindFunc(func(ctx context.Context, _ *engine.Call) (any, error) {
			select {
			case <-release:
				return "released", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}),
	})
	srv := startServer(t, h)
	t.Cleanup(free) // runs before srv.Close, which waits for the handler

	resp := post(t, srv, `{"version":1,"workflow":{"nodes":[{"id":"g","type":"gate"}]}}`)
	br := bufio.NewReader(resp.Body)
	first := readLine(t, br)
	if first.Type != protocol.TypeAccepted {
		t.Fatalf("first event %s, want accepted", first.line)
	}
	free()
	rest := readRest(t, br)
	evs := append([]event{first}, parseStream(t, rest)...)
	term := checkStream(t, evs)
	if term.Type != protocol.TypeResult || string(term.Output) != `{"g":"released"}` {
		t.Errorf("terminal event %s, want a result with g released", term.line)
	}
}

func TestClientDisconnectCancelsExecution(t *testing.T) {
	running := make(chan struct{})
	cancelled := make(chan error, 1)
	h := newHandler(t, map[string]engine.Kind{
		"hang": kindFunc(func(ctx context.Context, _ *engine.Call) (any, error) {
			close(running)
			select {
			case <-ctx.Done():
				cancelled <- ctx.Err()
				return nil, ctx.Err()
			case <-time.After(patience):
				return "never cancelled", nil
			}
		}),
	})
	summaries := make(chan protocol.Summary, 1)
	h.OnExecution = func(_ context.Context, s protocol.Summary) { summaries <- s }
	srv := startServer(t, h)

	resp := post(t, srv, `{"version":1,"workflow":{"nodes":[{"id":"h","type":"hang"}]}}`)
	br := bufio.NewReader(resp.Body)
	if first := readLine(t, br); first.Type != protocol.TypeAccepted {
		t.Fatalf("first event %s, want accepted", first.line)
	}
	select {
	case <-running:
	case <-time.After(patience):
		t.Fatal("the node never started")
	}
	// Closing an unfinished body closes the connection.
	resp.Body.Close()
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the node's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(patience):
		t.Fatal("the execution was not cancelled when its client went away")
	}
	select {
	case s := <-summaries:
		if s.Status == protocol.StatusCompleted {
			t.Errorf("a cancelled execution ended %s", s.Status)
		}
	case <-time.After(patience):
		t.Fatal("the handler did not return after its client went away")
	}
}

func TestPanicAfterAcceptance(t *testing.T) {
	h := newHandler(t, map[string]engine.Kind{
		"explode": kindFunc(func(context.Context, *engine.Call) (any, error) { panic("kaboom") }),
	})
	srv := startServer(t, h)
	resp := post(t, srv, `{"version":1,"workflow":{"nodes":[{"id":"bang","type":"explode"},{"id":"after","type":"set","needs":["bang"]}]}}`)
	evs := parseStream(t, readRest(t, resp.Body))
	term := checkStream(t, evs)
	if term.Type != protocol.TypeError || term.Error.Code != protocol.CodeExecutionFailed || term.Error.NodeID != "bang" {
		t.Errorf("terminal event %s, want an EXECUTION_FAILED error naming bang", term.line)
	}
	failed := false
	for _, e := range evs {
		failed = failed || e.Type == protocol.TypeNodeFailed && e.NodeID == "bang" && strings.Contains(e.Error.Message, "kaboom")
		if e.NodeID == "after" {
			t.Errorf("the dependent of a failed node has an event: %s", e.line)
		}
	}
	if !failed {
		t.Error("no node.failed event for the node that panicked")
	}
}
