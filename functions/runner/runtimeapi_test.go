//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// runtimeAPI is a Lambda Runtime API (the part aws-lambda-go speaks:
// next, response, error) for one bootstrap process. Unlike the emulator,
// which collects a response before answering, it notes when each line of
// a streamed response arrives, which shows whether events leave as they
// happen, and it sets each invocation's deadline itself.
type runtimeAPI struct {
	t       testing.TB
	srv     *httptest.Server
	queue   chan *invocation
	closed  chan struct{}
	mu      sync.Mutex
	byID    map[string]*invocation
	seq     int
	started time.Time     // when the bootstrap was started
	ready   chan struct{} // closed at the first GET next: init done
	readyAt time.Time
	stop    func() // ends the bootstrap
}

// invocation is one event and what the bootstrap answered.
type invocation struct {
	id       string
	event    []byte
	deadline time.Time
	queued   time.Time
	done     chan struct{}

	contentType string      // of the posted response
	failed      bool        // posted to .../error
	raw         []byte      // the posted payload
	lineAt      []time.Time // arrival of each body line after the prelude
	doneAt      time.Time
}

// startRuntimeAPI starts the API and the bootstrap against it with env.
func startRuntimeAPI(t testing.TB, env map[string]string) *runtimeAPI {
	t.Helper()
	return startRuntimeAPIWith(t, env, bootstrapPath(t))
}

// startRuntimeAPIWith is startRuntimeAPI running the bootstrap at boot.
func startRuntimeAPIWith(t testing.TB, env map[string]string, boot string) *runtimeAPI {
	t.Helper()
	a := &runtimeAPI{t: t, queue: make(chan *invocation, 16), closed: make(chan struct{}),
		byID: map[string]*invocation{}, ready: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", a.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", a.response)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", a.response)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		t.Errorf("init error: %s", b)
		w.WriteHeader(http.StatusAccepted)
	})
	a.srv = httptest.NewServer(mux)
	// Cleanups run last-first: the process dies, then next unblocks, then
	// the server closes.
	t.Cleanup(a.srv.Close)
	t.Cleanup(func() { close(a.closed) })
	env["AWS_LAMBDA_RUNTIME_API"] = a.srv.Listener.Addr().String()
	a.started = time.Now()
	_, a.stop = startProcess(t, env, boot)
	return a
}

// readyTime is when the bootstrap first asked for an event.
func (a *runtimeAPI) readyTime() time.Time {
	<-a.ready
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.readyAt
}

func (a *runtimeAPI) next(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	select {
	case <-a.ready:
	default:
		a.readyAt = time.Now()
		close(a.ready)
	}
	a.mu.Unlock()
	select {
	case inv := <-a.queue:
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:eu-west-1:123456789012:function:runner")
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-67891233-abcdef012345678912345678;Sampled=0")
		w.Write(inv.event)
	case <-r.Context().Done():
	case <-a.closed:
	}
}

// response reads a posted payload as it arrives, stamping each line of the
// streamed body.
func (a *runtimeAPI) response(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	inv := a.byID[r.PathValue("id")]
	a.mu.Unlock()
	if inv == nil {
		a.t.Errorf("response for unknown invocation %q", r.PathValue("id"))
		http.Error(w, "unknown invocation", http.StatusBadRequest)
		return
	}
	inv.contentType = r.Header.Get("Content-Type")
	inv.failed = r.URL.Path[len(r.URL.Path)-len("/error"):] == "/error"
	buf := make([]byte, 32<<10)
	bodyStart := -1
	for {
		n, err := r.Body.Read(buf)
		at := time.Now()
		inv.raw = append(inv.raw, buf[:n]...)
		if bodyStart < 0 {
			if i := bytes.Index(inv.raw, make([]byte, 8)); i >= 0 {
				bodyStart = i + 8
			}
		}
		if bodyStart >= 0 {
			for lines := bytes.Count(inv.raw[bodyStart:], []byte("\n")); len(inv.lineAt) < lines; {
				inv.lineAt = append(inv.lineAt, at)
			}
		}
		if err != nil {
			break
		}
	}
	inv.doneAt = time.Now()
	w.WriteHeader(http.StatusAccepted)
	close(inv.done)
}

// invoke queues event with the given deadline and waits for the answer.
func (a *runtimeAPI) invoke(t testing.TB, event any, deadline time.Time) *invocation {
	t.Helper()
	a.mu.Lock()
	a.seq++
	inv := &invocation{id: fmt.Sprintf("rt-%d", a.seq), event: mustJSON(t, event), deadline: deadline, done: make(chan struct{})}
	a.byID[inv.id] = inv
	a.mu.Unlock()
	inv.queued = time.Now()
	a.queue <- inv
	select {
	case <-inv.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("invocation %s got no response", inv.id)
	}
	return inv
}

// Function URL events leave as they happen: the accepted event reaches the
// runtime API while the execution still runs. The workflow's one node
// fails, waits its retry backoff (at least half of 800 ms, jittered), then
// fails for good, so the terminal event follows accepted by at least 400 ms
// if the stream is not held back.
func TestStreamingLeavesAsItHappens(t *testing.T) {
	a := startRuntimeAPI(t, lambdaEnv(t, nil))
	body := `{"version":1,"workflow":{"id":"flaky","nodes":[{"id":"flaky","type":"fail",` +
		`"retry":{"maxAttempts":2,"backoffMs":800},"with":{"message":"not yet"}}]}}`
	inv := a.invoke(t, functionURLEvent("POST", "/v1/executions", testToken, body), time.Now().Add(time.Minute))
	if inv.failed || inv.contentType != "application/vnd.awslambda.http-integration-response" {
		t.Fatalf("posted %q (error %v), want a streamed function URL response", inv.contentType, inv.failed)
	}
	p, payload := parseStreamed(t, inv.raw)
	if p.StatusCode != 200 || p.Headers["Content-Type"] != "application/x-ndjson" {
		t.Fatalf("prelude %+v", p)
	}
	evs := checkStream(t, payload)
	if last := evs[len(evs)-1]; last["type"] != "error" {
		t.Errorf("terminal event %v, want the node's failure", last)
	}
	if len(inv.lineAt) != len(evs) {
		t.Fatalf("%d line arrivals for %d events", len(inv.lineAt), len(evs))
	}
	if gap := inv.lineAt[len(evs)-1].Sub(inv.lineAt[0]); gap < 350*time.Millisecond {
		t.Errorf("accepted arrived only %v before the terminal event: the stream was held back", gap)
	}
}

// The invocation's deadline, not the configured timeout, ends an
// execution, in band: with less time left than the reserve (500 ms), the
// same execution that completes under a distant deadline ends with
// EXECUTION_FAILED "DEADLINE_EXCEEDED: deadline exceeded" right after accepted.
func TestInvocationDeadlineEndsExecution(t *testing.T) {
	a := startRuntimeAPI(t, lambdaEnv(t, nil))
	hello := helloBody(t)
	tests := []struct {
		name     string
		left     time.Duration
		wantType string
	}{
		{"distant deadline", time.Minute, "result"},
		{"deadline within the reserve", 300 * time.Millisecond, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := a.invoke(t, functionURLEvent("POST", "/v1/executions", testToken, hello), time.Now().Add(tt.left))
			p, payload := parseStreamed(t, inv.raw)
			if p.StatusCode != 200 {
				t.Fatalf("status %d: %s", p.StatusCode, payload)
			}
			evs := checkStream(t, payload)
			last := evs[len(evs)-1]
			if last["type"] != tt.wantType {
				t.Fatalf("terminal event %v, want %s", last, tt.wantType)
			}
			if tt.wantType == "error" {
				e, _ := last["error"].(map[string]any)
				if e["code"] != "EXECUTION_FAILED" || e["message"] != "DEADLINE_EXCEEDED: deadline exceeded" {
					t.Errorf("error %v, want EXECUTION_FAILED, deadline exceeded", e)
				}
			}
		})
	}
}

// rtEvent decodes a posted JSON payload (buffered responses).
func rtEvent(t testing.TB, inv *invocation, v any) {
	t.Helper()
	if err := json.Unmarshal(inv.raw, v); err != nil {
		t.Fatalf("payload %q: %v", inv.raw, err)
	}
}

// An API Gateway event gets a JSON payload, posted as such.
func TestBufferedResponseIsJSON(t *testing.T) {
	a := startRuntimeAPI(t, lambdaEnv(t, nil))
	inv := a.invoke(t, httpAPIEvent("GET", "/v1/capabilities", testToken, "", ""), time.Now().Add(time.Minute))
	var resp struct {
		StatusCode int `json:"statusCode"`
		Body       string
	}
	rtEvent(t, inv, &resp)
	if inv.failed || inv.contentType != "application/json" || resp.StatusCode != 200 || resp.Body == "" {
		t.Errorf("posted %q (error %v): %s", inv.contentType, inv.failed, inv.raw)
	}
	// Not an HTTP event: a function error, and the process serves on.
	inv = a.invoke(t, map[string]any{"Records": []any{}}, time.Now().Add(time.Minute))
	if !inv.failed {
		t.Errorf("a non-HTTP event was answered: %s", inv.raw)
	}
	inv = a.invoke(t, functionURLEvent("GET", "/v1/capabilities", testToken, ""), time.Now().Add(time.Minute))
	if p, _ := parseStreamed(t, inv.raw); p.StatusCode != 200 {
		t.Errorf("after a function error: status %d", p.StatusCode)
	}
}
