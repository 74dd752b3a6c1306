package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixedTime is the clock of every test Writer; it formats as fixedAt.
var fixedTime = time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

const fixedAt = "2026-01-02T03:04:05.006Z"

// recorder is the Writer's destination: it counts writes and flushes, and
// checks that every flush follows a whole line.
type recorder struct {
	t       *testing.T
	buf     bytes.Buffer
	writes  int
	flushes int
}

func (r *recorder) Write(p []byte) (int, error) {
	r.writes++
	return r.buf.Write(p)
}

func (r *recorder) flush() error {
	r.t.Helper()
	r.flushes++
	if b := r.buf.Bytes(); len(b) == 0 || b[len(b)-1] != '\n' {
		r.t.Errorf("flush %d: buffer does not end with a whole line: %q", r.flushes, b)
	}
	return nil
}

// lines returns the lines written so far, each without its newline.
func (r *recorder) lines() []string {
	s := r.buf.String()
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// newTestWriter returns a Writer for execution "x" with the fixed clock.
func newTestWriter(t *testing.T) (*Writer, *recorder) {
	t.Helper()
	rec := &recorder{t: t}
	w := NewWriter(rec, "x", rec.flush)
	w.now = func() time.Time { return fixedTime }
	return w, rec
}

// send writes e through Emit, or through Finish when it is terminal.
func send(w *Writer, e Event) error {
	if term, ok := e.(Terminal); ok {
		return w.Finish(term)
	}
	return w.Emit(e)
}

func TestWriterEventBytes(t *testing.T) {
	const head = `{"version":1,"type":%q,"executionId":"x","at":"` + fixedAt + `"`
	h := func(typ string) string { return fmt.Sprintf(head, typ) }
	tests := []struct {
		name  string
		event Event
		want  string
	}{
		{
			name:  "accepted",
			event: &Accepted{},
			want:  `{"version":1,"type":"accepted","executionId":"x","at":"2026-01-02T03:04:05.006Z"}` + "\n",
		},
		{
			name:  "node.started without input",
			event: &NodeStarted{NodeID: "fetch", NodeType: "http", Attempt: 1},
			want:  h("node.started") + `,"nodeId":"fetch","nodeType":"http","attempt":1}` + "\n",
		},
		{
			name:  "node.started with input compacted to one line",
			event: &NodeStarted{NodeID: "fetch", NodeType: "http", Attempt: 2, Input: json.RawMessage("{\n  \"url\": \"https://a.example\",\n  \"n\": [1, 2]\n}")},
			want:  h("node.started") + `,"nodeId":"fetch","nodeType":"http","attempt":2,"input":{"url":"https://a.example","n":[1,2]}}` + "\n",
		},
		{
			name:  "node.started with input null",
			event: &NodeStarted{NodeID: "a", NodeType: "set", Attempt: 1, Input: json.RawMessage(`null`)},
			want:  h("node.started") + `,"nodeId":"a","nodeType":"set","attempt":1,"input":null}` + "\n",
		},
		{
			name:  "node.completed durationMs 0 present",
			event: &NodeCompleted{NodeID: "a", NodeType: "set", Attempt: 1},
			want:  h("node.completed") + `,"nodeId":"a","nodeType":"set","attempt":1,"durationMs":0}` + "\n",
		},
		{
			name:  "node.completed with output",
			event: &NodeCompleted{NodeID: "m[3].inner", NodeType: "model", Attempt: 1, DurationMs: 1234, Output: json.RawMessage(`"done"`)},
			want:  h("node.completed") + `,"nodeId":"m[3].inner","nodeType":"model","attempt":1,"durationMs":1234,"output":"done"}` + "\n",
		},
		{
			name:  "node.completed of a code node: logs and queuedMs",
			event: &NodeCompleted{NodeID: "c", NodeType: "code", Attempt: 1, DurationMs: 12, Output: json.RawMessage(`1`), Logs: json.RawMessage(`["a <b>"]`), QueuedMs: 340},
			want:  h("node.completed") + `,"nodeId":"c","nodeType":"code","attempt":1,"durationMs":12,"output":1,"logs":["a <b>"],"queuedMs":340}` + "\n",
		},
		{
			name:  "node.failed of a code node: logs and queuedMs",
			event: &NodeFailed{NodeID: "c", NodeType: "code", Attempt: 1, DurationMs: 3, Error: NodeError{Code: CodeTimeout, Message: "node timed out"}, Logs: json.RawMessage(`["x"]`), QueuedMs: 7},
			want:  h("node.failed") + `,"nodeId":"c","nodeType":"code","attempt":1,"durationMs":3,"error":{"code":"TIMEOUT","message":"node timed out"},"retrying":false,"logs":["x"],"queuedMs":7}` + "\n",
		},
		{
			name:  "node.failed retrying false present",
			event: &NodeFailed{NodeID: "fetch", NodeType: "http", Attempt: 3, DurationMs: 15, Error: NodeError{Code: CodeHTTPError, Message: "status 500"}},
			want:  h("node.failed") + `,"nodeId":"fetch","nodeType":"http","attempt":3,"durationMs":15,"error":{"code":"HTTP_ERROR","message":"status 500"},"retrying":false}` + "\n",
		},
		{
			name:  "node.failed retrying true",
			event: &NodeFailed{NodeID: "fetch", NodeType: "http", Attempt: 1, DurationMs: 0, Error: NodeError{Code: CodeTimeout, Message: "timed out"}, Retrying: true},
			want:  h("node.failed") + `,"nodeId":"fetch","nodeType":"http","attempt":1,"durationMs":0,"error":{"code":"TIMEOUT","message":"timed out"},"retrying":true}` + "\n",
		},
		{
			name:  "node.failed message not HTML-escaped",
			event: &NodeFailed{NodeID: "e", NodeType: "set", Attempt: 1, Error: NodeError{Code: CodeExpressionError, Message: `${a < b && c > "d"}`}},
			want:  h("node.failed") + `,"nodeId":"e","nodeType":"set","attempt":1,"durationMs":0,"error":{"code":"EXPRESSION_ERROR","message":"${a < b && c > \"d\"}"},"retrying":false}` + "\n",
		},
		{
			name:  "node.suspended",
			event: &NodeSuspended{NodeID: "issue", NodeType: "tool", Reason: "consent", Request: ConsentRequest{Action: ActionToolCall, Resource: "github/create_issue"}},
			want:  h("node.suspended") + `,"nodeId":"issue","nodeType":"tool","reason":"consent","request":{"action":"tool.call","resource":"github/create_issue"}}` + "\n",
		},
		{
			name:  "permission.decision",
			event: &PermissionDecision{NodeID: "issue", Action: ActionToolCall, Resource: "github/create_issue", Decision: "deny", Source: "toolPolicy", Reason: "github/create_* is denied"},
			want:  h("permission.decision") + `,"nodeId":"issue","action":"tool.call","resource":"github/create_issue","decision":"deny","source":"toolPolicy","reason":"github/create_* is denied"}` + "\n",
		},
		{
			name:  "permission.decision empty reason present",
			event: &PermissionDecision{NodeID: "n", Action: ActionHTTPRequest, Resource: "api.example.com", Decision: "allow", Source: "permissions"},
			want:  h("permission.decision") + `,"nodeId":"n","action":"http.request","resource":"api.example.com","decision":"allow","source":"permissions","reason":""}` + "\n",
		},
		{
			name:  "result output null and usage zeros",
			event: &Result{Status: StatusCompleted},
			want:  h("result") + `,"status":"completed","output":null,"usage":{"inputTokens":0,"outputTokens":0,"modelCalls":0,"toolCalls":0,"httpRequests":0},"durationMs":0}` + "\n",
		},
		{
			name: "result completed",
			event: &Result{Status: StatusCompleted, Output: json.RawMessage(`{"a": 1}`), DurationMs: 42,
				Usage: Usage{InputTokens: 10, OutputTokens: 20, ModelCalls: 1, ToolCalls: 2, HTTPRequests: 3}},
			want: h("result") + `,"status":"completed","output":{"a":1},"usage":{"inputTokens":10,"outputTokens":20,"modelCalls":1,"toolCalls":2,"httpRequests":3},"durationMs":42}` + "\n",
		},
		{
			name: "result suspended",
			event: &Result{Status: StatusSuspended, DurationMs: 7, Suspended: []Suspension{
				{NodeID: "issue", Action: ActionToolCall, Resource: "github/create_issue"},
				{NodeID: "call.post", Action: ActionHTTPRequest, Resource: "api.example.com"},
			}},
			want: h("result") + `,"status":"suspended","output":null,"usage":{"inputTokens":0,"outputTokens":0,"modelCalls":0,"toolCalls":0,"httpRequests":0},"durationMs":7,"suspended":[{"nodeId":"issue","action":"tool.call","resource":"github/create_issue"},{"nodeId":"call.post","action":"http.request","resource":"api.example.com"}]}` + "\n",
		},
		{
			name:  "error without nodeId",
			event: &Error{Error: ExecutionError{Code: CodeExecutionFailed, Message: "deadline exceeded"}},
			want:  h("error") + `,"error":{"code":"EXECUTION_FAILED","message":"deadline exceeded"}}` + "\n",
		},
		{
			name:  "error with nodeId",
			event: &Error{Error: ExecutionError{Code: CodeExecutionFailed, Message: "node fetch failed", NodeID: "fetch"}},
			want:  h("error") + `,"error":{"code":"EXECUTION_FAILED","message":"node fetch failed","nodeId":"fetch"}}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, rec := newTestWriter(t)
			if err := send(w, tt.event); err != nil {
				t.Fatalf("write: %v", err)
			}
			if got := rec.buf.String(); got != tt.want {
				t.Errorf("wire bytes mismatch\n got: %s\nwant: %s", got, tt.want)
			}
			if rec.writes != 1 || rec.flushes != 1 {
				t.Errorf("writes, flushes = %d, %d; want 1, 1", rec.writes, rec.flushes)
			}
			_, terminal := tt.event.(Terminal)
			if w.Finished() != terminal {
				t.Errorf("Finished() = %v, want %v", w.Finished(), terminal)
			}
		})
	}
}

// TestWriterStampsHeader checks that the Writer, not the caller, decides the
// shared fields: whatever the caller left in the header is overwritten.
func TestWriterStampsHeader(t *testing.T) {
	w, rec := newTestWriter(t)
	e := &NodeStarted{
		Header: Header{Version: 9, Type: "bogus", ExecutionID: "other", At: "yesterday"},
		NodeID: "a", NodeType: "set", Attempt: 1,
	}
	if err := w.Emit(e); err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"type":"node.started","executionId":"x","at":"` + fixedAt + `","nodeId":"a","nodeType":"set","attempt":1}` + "\n"
	if got := rec.buf.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if w.ExecutionID() != "x" {
		t.Errorf("ExecutionID() = %q, want x", w.ExecutionID())
	}
}

// TestWriterOneLinePerEvent checks a whole stream: one line per event, each
// flushed as soon as it is written.
func TestWriterOneLinePerEvent(t *testing.T) {
	w, rec := newTestWriter(t)
	events := []Event{
		&Accepted{},
		&NodeStarted{NodeID: "a", NodeType: "set", Attempt: 1, Input: json.RawMessage("[\n1,\n2\n]")},
		&PermissionDecision{NodeID: "b", Action: ActionHTTPRequest, Resource: "h", Decision: "allow", Source: "permissions", Reason: "line one\nline two"},
		&NodeCompleted{NodeID: "a", NodeType: "set", Attempt: 1, Output: json.RawMessage("{\"s\":\"x\\ny\"}")},
		&NodeFailed{NodeID: "b", NodeType: "http", Attempt: 1, Error: NodeError{Code: CodeHTTPError, Message: "a\r\nb"}},
		&Result{Status: StatusCompleted, Output: json.RawMessage("\n\t\"done\"\n")},
	}
	wantTypes := []string{TypeAccepted, TypeNodeStarted, TypePermissionDecision, TypeNodeCompleted, TypeNodeFailed, TypeResult}
	for i, e := range events {
		if err := send(w, e); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if got := len(rec.lines()); got != i+1 {
			t.Fatalf("after event %d: %d lines, want %d", i, got, i+1)
		}
		if rec.flushes != i+1 {
			t.Fatalf("after event %d: %d flushes, want %d", i, rec.flushes, i+1)
		}
	}
	for i, line := range rec.lines() {
		var ev struct {
			Version int    `json:"version"`
			Type    string `json:"type"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, line)
		}
		if ev.Version != Version || ev.Type != wantTypes[i] {
			t.Errorf("line %d: version %d type %q, want 1 %q", i, ev.Version, ev.Type, wantTypes[i])
		}
	}
}

func TestWriterNothingAfterFinish(t *testing.T) {
	terminals := []struct {
		name string
		t    Terminal
	}{
		{"result", &Result{Status: StatusCompleted}},
		{"error", &Error{Error: ExecutionError{Code: CodeExecutionFailed, Message: "m"}}},
	}
	after := []struct {
		name  string
		write func(*Writer) error
	}{
		{"Emit", func(w *Writer) error { return w.Emit(&NodeStarted{NodeID: "late"}) }},
		{"Finish result", func(w *Writer) error { return w.Finish(&Result{Status: StatusCompleted}) }},
		{"Finish error", func(w *Writer) error {
			return w.Finish(&Error{Error: ExecutionError{Code: CodeExecutionFailed, Message: "late"}})
		}},
	}
	for _, term := range terminals {
		for _, a := range after {
			t.Run(term.name+" then "+a.name, func(t *testing.T) {
				w, rec := newTestWriter(t)
				if err := w.Emit(&Accepted{}); err != nil {
					t.Fatal(err)
				}
				if err := w.Finish(term.t); err != nil {
					t.Fatal(err)
				}
				before, flushes := rec.buf.String(), rec.flushes
				if err := a.write(w); !errors.Is(err, ErrFinished) {
					t.Errorf("%s after Finish = %v, want ErrFinished", a.name, err)
				}
				if err := a.write(w); !errors.Is(err, ErrFinished) {
					t.Errorf("second %s after Finish = %v, want ErrFinished", a.name, err)
				}
				if rec.buf.String() != before || rec.flushes != flushes {
					t.Errorf("written after Finish: %q", strings.TrimPrefix(rec.buf.String(), before))
				}
				if !w.Finished() {
					t.Error("Finished() = false after Finish")
				}
				if err := w.Err(); err != nil {
					t.Errorf("Err() = %v, want nil: ErrFinished is not a write error", err)
				}
			})
		}
	}
}

// TestWriterEmitRefusesTerminal checks that only Finish can end the stream:
// a Result or Error handed to Emit is refused, and nothing is written.
func TestWriterEmitRefusesTerminal(t *testing.T) {
	for _, e := range []Event{
		&Result{Status: StatusCompleted},
		&Error{Error: ExecutionError{Code: CodeExecutionFailed, Message: "m"}},
	} {
		t.Run(e.eventType(), func(t *testing.T) {
			w, rec := newTestWriter(t)
			if err := w.Emit(e); err == nil {
				t.Errorf("Emit(%T) = nil, want an error", e)
			}
			if rec.buf.Len() != 0 || rec.flushes != 0 {
				t.Errorf("Emit(%T) wrote %q", e, rec.buf.String())
			}
			if w.Finished() {
				t.Error("Finished() = true: Emit ended the stream")
			}
			if err := w.Finish(&Result{Status: StatusCompleted}); err != nil {
				t.Errorf("Finish after refused Emit: %v", err)
			}
			if n := len(rec.lines()); n != 1 {
				t.Errorf("%d lines, want exactly one terminal event", n)
			}
		})
	}
}

func TestWriterConcurrentEmit(t *testing.T) {
	const goroutines, perGoroutine = 16, 64
	w, rec := newTestWriter(t)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				id := fmt.Sprintf("n%d-%d", g, i)
				// A long reason makes torn writes likely if framing broke.
				reason := strings.Repeat(id, 50)
				if err := w.Emit(&PermissionDecision{NodeID: id, Action: ActionToolCall, Resource: "r", Decision: "allow", Source: "s", Reason: reason}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Emit: %v", err)
	}
	lines := rec.lines()
	if len(lines) != goroutines*perGoroutine {
		t.Fatalf("%d lines, want %d", len(lines), goroutines*perGoroutine)
	}
	if rec.writes != len(lines) || rec.flushes != len(lines) {
		t.Errorf("writes %d, flushes %d, want %d each", rec.writes, rec.flushes, len(lines))
	}
	seen := make(map[string]bool)
	for i, line := range lines {
		var ev PermissionDecision
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %d is not a whole event: %v: %.80s", i, err, line)
		}
		if ev.Type != TypePermissionDecision || ev.ExecutionID != "x" || ev.Reason != strings.Repeat(ev.NodeID, 50) {
			t.Errorf("line %d garbled: %.80s", i, line)
		}
		if seen[ev.NodeID] {
			t.Errorf("line %d: node %s written twice", i, ev.NodeID)
		}
		seen[ev.NodeID] = true
	}
}

// failingWriter accepts ok writes, then fails every write with err.
type failingWriter struct {
	ok     int
	err    error
	writes int
	buf    bytes.Buffer
}

func (f *failingWriter) Write(p []byte) (int, error) {
	f.writes++
	if f.writes > f.ok {
		return 0, f.err
	}
	return f.buf.Write(p)
}

func TestWriterWriteErrorSticks(t *testing.T) {
	errGone := errors.New("client went away")
	fw := &failingWriter{ok: 1, err: errGone}
	w := NewWriter(fw, "x", nil)
	w.now = func() time.Time { return fixedTime }

	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatalf("first Emit: %v", err)
	}
	if err := w.Err(); err != nil {
		t.Fatalf("Err() before any failure = %v", err)
	}
	if err := w.Emit(&NodeStarted{NodeID: "a"}); !errors.Is(err, errGone) {
		t.Fatalf("failing Emit = %v, want %v", err, errGone)
	}
	if err := w.Emit(&NodeStarted{NodeID: "b"}); !errors.Is(err, errGone) {
		t.Errorf("Emit after failure = %v, want %v", err, errGone)
	}
	if fw.writes != 2 {
		t.Errorf("underlying writes = %d, want 2: nothing is attempted after a failure", fw.writes)
	}
	if err := w.Err(); !errors.Is(err, errGone) {
		t.Errorf("Err() = %v, want %v", err, errGone)
	}
	if err := w.Finish(&Result{Status: StatusCompleted}); !errors.Is(err, errGone) {
		t.Errorf("Finish after failure = %v, want %v", err, errGone)
	}
	if !w.Finished() {
		t.Error("Finished() = false after Finish")
	}
	if err := w.Err(); !errors.Is(err, errGone) {
		t.Errorf("Err() after Finish = %v, want %v", err, errGone)
	}
	want := `{"version":1,"type":"accepted","executionId":"x","at":"` + fixedAt + `"}` + "\n"
	if got := fw.buf.String(); got != want {
		t.Errorf("written %q, want only %q", got, want)
	}
}

func TestWriterFlushErrorSticks(t *testing.T) {
	errFlush := errors.New("flush failed")
	var buf bytes.Buffer
	flushes := 0
	w := NewWriter(&buf, "x", func() error {
		flushes++
		if flushes > 1 {
			return errFlush
		}
		return nil
	})
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Emit(&NodeStarted{NodeID: "a"}); !errors.Is(err, errFlush) {
		t.Fatalf("Emit with failing flush = %v, want %v", err, errFlush)
	}
	lines := buf.String()
	if err := w.Emit(&NodeStarted{NodeID: "b"}); !errors.Is(err, errFlush) {
		t.Errorf("Emit after flush failure = %v, want %v", err, errFlush)
	}
	if err := w.Err(); !errors.Is(err, errFlush) {
		t.Errorf("Err() = %v, want %v", err, errFlush)
	}
	if buf.String() != lines || flushes != 2 {
		t.Errorf("written after flush failure: %q (flushes %d)", strings.TrimPrefix(buf.String(), lines), flushes)
	}
}

// TestWriterMarshalError checks that an event that cannot be encoded writes
// nothing and does not break the stream.
func TestWriterMarshalError(t *testing.T) {
	w, rec := newTestWriter(t)
	if err := w.Emit(&NodeStarted{NodeID: "a", Input: json.RawMessage(`{"unterminated":`)}); err == nil {
		t.Fatal("Emit with invalid raw input = nil, want an error")
	}
	if rec.buf.Len() != 0 || rec.flushes != 0 {
		t.Errorf("written %q", rec.buf.String())
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err() = %v: an encoding error is not the client going away", err)
	}
	if err := w.Emit(&Accepted{}); err != nil {
		t.Errorf("Emit after encoding error: %v", err)
	}
}

func TestWriterClockInUTC(t *testing.T) {
	w, rec := newTestWriter(t)
	w.now = func() time.Time {
		return time.Date(2026, 1, 1, 22, 4, 5, 6_789_000, time.FixedZone("EST", -5*60*60))
	}
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"type":"accepted","executionId":"x","at":"2026-01-02T03:04:05.006Z"}` + "\n"
	if got := rec.buf.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestFormatTime(t *testing.T) {
	tests := []struct {
		name string
		t    time.Time
		want string
	}{
		{"utc", fixedTime, "2026-01-02T03:04:05.006Z"},
		{"whole second keeps .000", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000Z"},
		{"sub-millisecond truncated", time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.UTC), "2026-01-02T03:04:05.999Z"},
		{"microseconds dropped", time.Date(2026, 1, 2, 3, 4, 5, 120_500, time.UTC), "2026-01-02T03:04:05.000Z"},
		{"east of UTC", time.Date(2026, 1, 2, 8, 34, 5, 6_000_000, time.FixedZone("IST", 5*60*60+30*60)), "2026-01-02T03:04:05.006Z"},
		{"west of UTC across midnight and year", time.Date(2025, 12, 31, 19, 0, 0, 10_000_000, time.FixedZone("PST", -8*60*60)), "2026-01-01T03:00:00.010Z"},
		{"named UTC-equivalent zone", time.Date(2026, 6, 1, 0, 0, 0, 0, time.FixedZone("GMT", 0)), "2026-06-01T00:00:00.000Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatTime(tt.t); got != tt.want {
				t.Errorf("FormatTime(%v) = %q, want %q", tt.t, got, tt.want)
			}
		})
	}
}

// TestWriterEventTime: an event's Header.Time is its "at" (in UTC, with
// the hand-written and the encoding/json encoders alike), the clock is read
// for one without, and no line's time is earlier than the line's before it:
// an event stamped earlier, or a clock stepped back, gets the last time. The
// rows are one stream, in order.
func TestWriterEventTime(t *testing.T) {
	at := func(h, m, s, ms int) time.Time { return time.Date(2026, 1, 2, h, m, s, ms*1_000_000, time.UTC) }
	est := time.FixedZone("EST", -5*60*60)
	w, rec := newTestWriter(t)
	var clock time.Time
	w.now = func() time.Time { return clock }
	for _, tt := range []struct {
		name  string
		clock time.Time // the Writer's clock for this event
		e     Event
		want  string // its "at"
	}{
		{"clock", at(3, 4, 5, 6), &Accepted{}, "2026-01-02T03:04:05.006Z"},
		{"own time", at(3, 4, 5, 6), &NodeStarted{Header: Header{Time: at(3, 4, 6, 100)}, NodeID: "a"}, "2026-01-02T03:04:06.100Z"},
		{"own time, another zone", at(3, 4, 5, 6), &NodeCompleted{Header: Header{Time: time.Date(2026, 1, 1, 22, 4, 7, 0, est)}, NodeID: "a"}, "2026-01-02T03:04:07.000Z"},
		{"own time earlier than the last line", at(3, 4, 9, 0), &NodeFailed{Header: Header{Time: at(3, 4, 6, 0)}, NodeID: "b"}, "2026-01-02T03:04:07.000Z"},
		{"clock stepped back", at(3, 0, 0, 0), &NodeSuspended{NodeID: "c"}, "2026-01-02T03:04:07.000Z"},
		{"own time, encoding/json", at(3, 4, 9, 0), &PermissionDecision{Header: Header{Time: at(3, 4, 8, 250)}, NodeID: "d"}, "2026-01-02T03:04:08.250Z"},
		{"clock again", at(3, 4, 9, 500), &NodeStarted{NodeID: "e"}, "2026-01-02T03:04:09.500Z"},
		{"terminal", at(3, 4, 10, 0), &Result{Status: StatusCompleted}, "2026-01-02T03:04:10.000Z"},
	} {
		clock = tt.clock
		if err := send(w, tt.e); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		lines := rec.lines()
		var h Header
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &h); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if h.At != tt.want {
			t.Errorf("%s: at %q, want %q", tt.name, h.At, tt.want)
		}
	}
}
