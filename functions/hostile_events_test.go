package functions_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/protocol"
)

// Hostile events: a workflow that makes as many, as large events as it can
// gets a bounded stream with exactly one terminal event, and the process's
// heap stays bounded. Helpers are prefixed events.

// eventsFailFlood is 2,000 fail nodes with onError continue, each failing
// with a 1 MB message (read from the input, so the body stays small). The
// message is made of the characters that grow most when escaped.
func eventsFailFlood() string {
	var b strings.Builder
	msg := strings.Repeat(`<"&>`, 1<<18)
	fmt.Fprintf(&b, `{"version":1,"input":{"m":%q},"workflow":{"nodes":[`, msg)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"f%d","type":"fail","with":{"message":"${{ input.m }}"},"onError":"continue"}`, i)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// eventsPeakHeap samples the heap until stop is called and returns the
// largest figure seen.
func eventsPeakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-exited
		return peak.Load()
	}
}

// eventsCheck asserts the bounds on a finished stream.
func eventsCheck(t *testing.T, body []byte, maxStream int64, maxEvent int, escaped bool) {
	t.Helper()
	size := int64(len(body))
	if escaped {
		b, _ := json.Marshal(string(body))
		size = int64(len(b))
	}
	if size > maxStream {
		t.Errorf("stream of %d bytes (as counted), over the %d-byte limit", size, maxStream)
	}
	evs := parseStream(t, body)
	term := checkStream(t, evs)
	for i, e := range evs {
		if len(e.line)+1 > maxEvent {
			t.Errorf("event %d is %d bytes, over maxEventBytes %d", i, len(e.line)+1, maxEvent)
			break
		}
	}
	if term.Type != protocol.TypeError || term.Error.Code != protocol.CodeExecutionFailed ||
		!strings.Contains(term.Error.Message, string(protocol.CodeLimitExceeded)) {
		t.Errorf("terminal event %.300s, want an EXECUTION_FAILED error naming LIMIT_EXCEEDED", term.line)
	}
	failed := 0
	for _, e := range evs {
		if e.Type == protocol.TypeNodeFailed {
			failed++
			if !strings.Contains(e.Error.Message, "…[$truncated: 1048576 bytes]") || len(e.Error.Message) < maxEvent/2 {
				t.Errorf("node.failed message not cut to fit: %.200s", e.line)
				break
			}
		}
	}
	if failed == 0 || failed >= 2000 {
		t.Errorf("%d node.failed events, want some and not all 2,000", failed)
	}
}

func TestHostileEventsStreamBounded(t *testing.T) {
	tests := []struct {
		name     string
		buffered bool
	}{
		{"streamed", false},
		{"buffered", true},
	}
	body := eventsFailFlood()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHandler(t, nil)
			const maxStream, maxEvent = 4 << 20, 64 << 10
			h.MaxStreamBytes, h.MaxBufferedStreamBytes = maxStream, maxStream
			runtime.GC()
			stop := eventsPeakHeap()
			start := time.Now()
			var out []byte
			if tt.buffered {
				// As the API Gateway and ALB adapters serve it: the
				// whole response buffered in memory.
				req := httptest.NewRequestWithContext(functions.BufferedResponse(t.Context()), http.MethodPost, protocol.PathExecutions, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+goodToken)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d: %.300s", rec.Code, rec.Body)
				}
				out = rec.Body.Bytes()
			} else {
				srv := startServer(t, h)
				out = readRest(t, post(t, srv, body).Body)
			}
			took := time.Since(start)
			peak := stop()
			if took > 30*time.Second {
				t.Errorf("took %v, want under 30s", took)
			}
			eventsCheck(t, out, maxStream, maxEvent, tt.buffered)
			// The body (1.3 MB) and a stream buffer are held at once; 2,000
			// messages of 1 MB must never be.
			if peak > 256<<20 {
				t.Errorf("heap peaked at %d MB, want under 256 MB", peak>>20)
			}
			t.Logf("%s: %d bytes, %v, heap peak %d MB", tt.name, len(out), took, peak>>20)

			// The runner still serves the next request.
			srv := startServer(t, h)
			next := parseStream(t, readRest(t, post(t, srv, `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`).Body))
			if term := checkStream(t, next); term.Type != protocol.TypeResult {
				t.Errorf("next request ended with %s", term.line)
			}
		})
	}
}

// TestHostileEventsLargeResult checks that a result too large for the room
// left ends the stream with an error instead of passing the limit.
func TestHostileEventsLargeResult(t *testing.T) {
	h := newHandler(t, nil)
	h.MaxStreamBytes = 256 << 10
	big := strings.Repeat("x", 512<<10)
	srv := startServer(t, h)
	evs := parseStream(t, readRest(t, post(t, srv, fmt.Sprintf(`{"version":1,"input":{"m":%q},"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":"${{ input.m }}"}}],"output":"${{ nodes.a.output }}"}}`, big)).Body))
	term := checkStream(t, evs)
	if term.Type != protocol.TypeError || !strings.Contains(term.Error.Message, string(protocol.CodeLimitExceeded)) {
		t.Errorf("terminal event %.300s, want an error naming LIMIT_EXCEEDED", term.line)
	}
}
