package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAppendStringMatchesEncodingJSON checks the hand-written string
// encoder against encoding/json (HTML escaping off) on awkward input.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\x00\x01\x1f\x7f", "\b\f\n\r\t", "<>&", "\u2028\u2029", "é€😀", "bad\xffutf8\xc3", "a\u2028b"} {
		checkAppendString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", `"\`, "\x00\u2028<&>", "bad\xff"} {
		f.Add(s)
	}
	f.Fuzz(checkAppendString)
}

func checkAppendString(t *testing.T, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(buf.String(), "\n")
	if got := string(appendString(nil, s)); got != want {
		t.Errorf("appendString(%q) = %s, want %s", s, got, want)
	}
	if !utfValid(s) {
		return
	}
	esc, _ := json.Marshal(s) // HTML escaping on, as the Lambda runtime
	if got, want := escapedLen([]byte(s)), len(esc)-2; got != want {
		t.Errorf("escapedLen(%q) = %d, want %d", s, got, want)
	}
}

func utfValid(s string) bool { return strings.ToValidUTF8(s, "\x00") == s }

// TestWriterEventLimit checks that every line fits MaxEventBytes, with the
// longest texts cut and marked.
func TestWriterEventLimit(t *testing.T) {
	const limit = 512
	big := strings.Repeat(`<"é`, 4000)
	tests := []struct {
		name  string
		event Event
	}{
		{"node.failed", &NodeFailed{NodeID: "a", NodeType: "fail", Attempt: 1, Error: NodeError{Code: CodeFailed, Message: big}}},
		{"node.failed long id too", &NodeFailed{NodeID: strings.Repeat("n", 3000), NodeType: "fail", Attempt: 1, Error: NodeError{Code: CodeFailed, Message: big}}},
		{"permission.decision", &PermissionDecision{NodeID: "a", Action: "http", Resource: big, Decision: "deny", Source: "policy", Reason: big}},
		{"node.completed output", &NodeCompleted{NodeID: "a", NodeType: "set", Attempt: 1, Output: json.RawMessage(`"` + strings.Repeat("x", 5000) + `"`)}},
		{"node.completed output and logs", &NodeCompleted{NodeID: "a", NodeType: "code", Attempt: 1, Output: json.RawMessage(`"` + strings.Repeat("x", 400) + `"`),
			Logs: json.RawMessage(`["` + strings.Repeat("l", 400) + `"]`), QueuedMs: 12}},
		{"node.failed logs", &NodeFailed{NodeID: "a", NodeType: "code", Attempt: 1, Error: NodeError{Code: CodeCodeError, Message: "m"},
			Logs: json.RawMessage(`["` + strings.Repeat("l", 4000) + `"]`)}},
		{"error", &Error{Error: ExecutionError{Code: CodeExecutionFailed, Message: big, NodeID: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := newWriter(&buf, "x", nil, StreamOptions{MaxEventBytes: limit})
			if err := send(w, tt.event); err != nil {
				t.Fatal(err)
			}
			line := buf.Bytes()
			if len(line) > limit {
				t.Errorf("line of %d bytes, want at most %d: %s", len(line), limit, line)
			}
			if !json.Valid(line) || !bytes.Contains(line, []byte("$truncated")) {
				t.Errorf("line not valid JSON with a $truncated mark: %s", line)
			}
		})
	}
}

// TestWriterStreamLimit checks the stream bound: events past it are
// dropped, OnLimit is called once, and the terminal event says why.
func TestWriterStreamLimit(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		var buf bytes.Buffer
		calls := 0
		var ctx context.Context
		if coalesce {
			ctx = t.Context()
		}
		w := NewStreamWriter(ctx, &buf, "x", nil, StreamOptions{MaxEventBytes: 300, MaxStreamBytes: 2000, OnLimit: func() { calls++ }})
		if err := w.Emit(&Accepted{}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			_ = w.Emit(&NodeStarted{NodeID: "n", NodeType: "set", Attempt: 1})
		}
		if err := w.Finish(&Result{Status: StatusCompleted, Output: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if buf.Len() > 2000 || calls != 1 || !w.Limited() {
			t.Errorf("coalesce %v: %d bytes, OnLimit called %d times, limited %v", coalesce, buf.Len(), calls, w.Limited())
		}
		if last := lines[len(lines)-1]; !strings.Contains(last, `"type":"error"`) || !strings.Contains(last, "LIMIT_EXCEEDED") {
			t.Errorf("coalesce %v: terminal %s", coalesce, last)
		}
	}
}

// slowWriter blocks every write until released, like a client not reading.
type slowWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	writes  int
	release chan struct{}
}

func (s *slowWriter) Write(p []byte) (int, error) {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.buf.Write(p)
}

// TestWriterCoalesces checks that a burst costs few writes, that Emit does
// not wait on a stalled client while the buffer has room, that a full
// buffer stops waiting when the context ends, and that Finish delivers
// every accepted line in order.
func TestWriterCoalesces(t *testing.T) {
	sw := &slowWriter{release: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	w := NewStreamWriter(ctx, sw, "x", nil, StreamOptions{MaxBuffered: 64 << 10})
	w.now = func() time.Time { return fixedTime }
	close(sw.release) // accepted goes out at once
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	sw.release = make(chan struct{}) // now the client stalls
	start := time.Now()
	n := 0
	for ; n < 200; n++ {
		if err := w.Emit(&NodeStarted{NodeID: "a", NodeType: "set", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("200 emits to a stalled client took %v", d)
	}
	// Fill the buffer; with the context ended, Emit drops instead of
	// waiting.
	cancel()
	dropped := false
	for i := 0; i < 2000 && !dropped; i++ {
		if err := w.Emit(&NodeStarted{NodeID: "a", NodeType: "set", Attempt: 1}); err != nil {
			dropped = true
		} else {
			n++
		}
	}
	if !dropped {
		t.Error("Emit never dropped on a full buffer with the context ended")
	}
	close(sw.release)
	if err := w.Finish(&Result{Status: StatusCompleted, Output: json.RawMessage(`null`)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(sw.buf.String(), "\n"), "\n")
	if len(lines) != n+2 || !strings.Contains(lines[len(lines)-1], `"type":"result"`) {
		t.Errorf("%d lines, want %d ending with the result", len(lines), n+2)
	}
	if sw.writes > 20 {
		t.Errorf("%d writes for %d lines, want them coalesced", sw.writes, len(lines))
	}
}

// TestWriterEmitsWhileWriting: while one write is out to a client that is
// not reading, Emit goes on into the other buffer, and waits only once that
// one is full too; the write starts when the buffer is half full, not
// full. So a run whose events outpace one write never stops for it.
func TestWriterEmitsWhileWriting(t *testing.T) {
	const maxBuffered = 4096
	ev := &NodeStarted{NodeID: "a", NodeType: "set", Attempt: 1}
	var one bytes.Buffer
	probe := NewWriter(&one, "x", nil)
	probe.now = func() time.Time { return fixedTime }
	if err := probe.Emit(ev); err != nil {
		t.Fatal(err)
	}
	// More than a full buffer; less than half of one being written and a
	// full one after it.
	n := maxBuffered * 7 / 5 / one.Len()
	sw := &slowWriter{release: make(chan struct{})}
	w := NewStreamWriter(t.Context(), sw, "x", nil, StreamOptions{MaxBuffered: maxBuffered})
	w.now = func() time.Time { return fixedTime }
	close(sw.release) // accepted goes out at once
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	sw.release = make(chan struct{}) // now the client stalls
	done := make(chan error, 1)
	go func() {
		for range n {
			if err := w.Emit(ev); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(sw.release)
		t.Fatalf("%d events of %d bytes (buffer %d) waited for a stalled client's write", n, one.Len(), maxBuffered)
	}
	close(sw.release)
	if err := w.Finish(&Result{Status: StatusCompleted, Output: json.RawMessage(`null`)}); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(sw.buf.String(), "\n"); lines != n+2 {
		t.Errorf("%d lines, want %d", lines, n+2)
	}
}

// enteredWriter tells when a write begins, then blocks it until released.
type enteredWriter struct {
	entered chan int // the write's length
	release chan struct{}
}

func (e *enteredWriter) Write(p []byte) (int, error) {
	e.entered <- len(p)
	<-e.release
	return len(p), nil
}

// TestWriterWritesAtHalf: a buffer half full is written at once, however
// long the flush interval, so that a burst's first lines go out while the
// rest are made.
func TestWriterWritesAtHalf(t *testing.T) {
	const maxBuffered = 4096
	ew := &enteredWriter{entered: make(chan int, 1), release: make(chan struct{})}
	w := NewStreamWriter(t.Context(), ew, "x", nil, StreamOptions{MaxBuffered: maxBuffered, FlushInterval: time.Hour})
	go func() { <-ew.entered; ew.release <- struct{}{} }() // accepted
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; w.pendingLen() < maxBuffered/2; i++ {
		if err := w.Emit(&NodeStarted{NodeID: "a", NodeType: "set", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// The flusher, started by this first line, goes to sleep
			// for the interval; what follows must wake it.
			time.Sleep(100 * time.Millisecond)
		}
	}
	select {
	case n := <-ew.entered:
		if n < maxBuffered/2 {
			t.Errorf("wrote %d bytes, want the half buffer", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a half-full buffer waited for the flush interval")
	}
	close(ew.release)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range ew.entered {
		}
	}()
	if err := w.Finish(&Result{Status: StatusCompleted, Output: json.RawMessage(`null`)}); err != nil {
		t.Fatal(err)
	}
	close(ew.entered) // Finish returned: nothing writes any more
	<-drained
}

// pendingLen is how many bytes wait to be written.
func (w *Writer) pendingLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// BenchmarkWriterEvent measures one node event through a coalescing Writer
// (ns and allocs per event).
func BenchmarkWriterEvent(b *testing.B) {
	for _, mode := range []string{"sync", "coalesced"} {
		b.Run(mode, func(b *testing.B) {
			var ctx context.Context
			if mode == "coalesced" {
				ctx = b.Context()
			}
			w := NewStreamWriter(ctx, io.Discard, "0190-exec", func() error { return nil }, StreamOptions{MaxEventBytes: 64 << 10, MaxStreamBytes: 1 << 62})
			_ = w.Emit(&Accepted{})
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				switch i % 3 {
				case 0:
					_ = w.Emit(&NodeStarted{NodeID: "step-1", NodeType: "set", Attempt: 1})
				case 1:
					_ = w.Emit(&NodeCompleted{NodeID: "step-1", NodeType: "set", Attempt: 1, DurationMs: 3})
				default:
					_ = w.Emit(&NodeFailed{NodeID: "step-1", NodeType: "http", Attempt: 1, Error: NodeError{Code: CodeHTTPError, Message: "status 500"}})
				}
			}
			b.StopTimer()
			_ = w.Finish(&Result{Status: StatusCompleted, Output: json.RawMessage(`null`)})
		})
	}
}

// TestWriterCoalescedConcurrentEmit checks that lines stay whole when many
// goroutines emit into a small buffer that keeps filling.
func TestWriterCoalescedConcurrentEmit(t *testing.T) {
	var buf bytes.Buffer
	w := NewStreamWriter(t.Context(), &buf, "x", nil, StreamOptions{MaxBuffered: 512})
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				_ = w.Emit(&NodeFailed{NodeID: strings.Repeat(string(rune('a'+g)), 1+i%40), NodeType: "set", Error: NodeError{Code: CodeFailed, Message: strings.Repeat("m", i)}})
			}
		})
	}
	wg.Wait()
	if err := w.Finish(&Result{Status: StatusCompleted, Output: json.RawMessage(`null`)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 8*200+2 {
		t.Errorf("%d lines, want %d", len(lines), 8*200+2)
	}
	for i, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("line %d is not whole JSON: %.120s", i, l)
		}
	}
}

// TestStreamWriterBuffersReused: streams one after another (their pending
// buffers handed on through the pool) carry exactly their own lines, a
// long stream's bytes never trailing a short one's, and concurrent streams
// never share a buffer.
func TestStreamWriterBuffersReused(t *testing.T) {
	stream := func(id string, nodes int) string {
		var buf bytes.Buffer
		w := NewStreamWriter(t.Context(), &buf, id, nil, StreamOptions{})
		w.now = func() time.Time { return fixedTime }
		if err := w.Emit(&Accepted{}); err != nil {
			t.Fatal(err)
		}
		for i := range nodes {
			if err := w.Emit(&NodeStarted{NodeID: fmt.Sprintf("%s-%d", id, i), NodeType: "set", Attempt: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(&Result{Status: StatusCompleted}); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	want := func(id string, nodes int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"version":1,"type":"accepted","executionId":"%s","at":"%s"}`+"\n", id, fixedAt)
		for i := range nodes {
			fmt.Fprintf(&b, `{"version":1,"type":"node.started","executionId":"%s","at":"%s","nodeId":"%s-%d","nodeType":"set","attempt":1}`+"\n", id, fixedAt, id, i)
		}
		fmt.Fprintf(&b, `{"version":1,"type":"result","executionId":"%s","at":"%s","status":"completed","output":null,"usage":{"inputTokens":0,"outputTokens":0,"modelCalls":0,"toolCalls":0,"httpRequests":0},"durationMs":0}`+"\n", id, fixedAt)
		return b.String()
	}
	for _, n := range []int{2000, 3, 0, 500, 1} {
		id := fmt.Sprintf("seq%d", n)
		if got, w := stream(id, n), want(id, n); got != w {
			t.Fatalf("stream of %d nodes: %d bytes, want %d\n%s", n, len(got), len(w), got[strings.LastIndex(got[:len(got)-1], "\n")+1:])
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 20 {
				id, n := fmt.Sprintf("g%d-%d", g, k), (g*37+k*11)%300
				if got, w := stream(id, n), want(id, n); got != w {
					t.Errorf("concurrent stream %s: %d bytes, want %d", id, len(got), len(w))
					return
				}
			}
		})
	}
	wg.Wait()
}

// timedWriter records when each write arrived.
type timedWriter struct {
	mu    sync.Mutex
	at    []time.Time
	lines []int // lines in each write
}

func (s *timedWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, time.Now())
	s.lines = append(s.lines, bytes.Count(p, []byte("\n")))
	return len(p), nil
}

func (s *timedWriter) writes() ([]time.Time, []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...), append([]int(nil), s.lines...)
}

// TestWriterBurstStretches: in a burst the wait between writes grows, so a
// long one costs far fewer writes than one per FlushInterval, yet lines
// keep leaving during it; after a quiet spell the next line goes out at
// once again.
func TestWriterBurstStretches(t *testing.T) {
	const interval = 2 * time.Millisecond
	tw := &timedWriter{}
	w := NewStreamWriter(t.Context(), tw, "x", nil, StreamOptions{FlushInterval: interval})
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	// A burst of 200 ms: a line every 20 µs or so.
	start := time.Now()
	for time.Since(start) < 200*time.Millisecond {
		if err := w.Emit(&NodeStarted{NodeID: "a", NodeType: "set", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Microsecond)
	}
	burst := time.Since(start)
	at, _ := tw.writes()
	// One per interval would be 100; doubling to 8 intervals (16 ms)
	// makes about 16. Late timers on a loaded machine make fewer.
	if n := len(at) - 1; n > 40 || n < 3 {
		t.Errorf("%d writes during a %v burst at a %v interval, want 3 to 40", n, burst, interval)
	}
	// A quiet spell, then one line: it leaves without waiting for more.
	time.Sleep(50 * time.Millisecond)
	at, _ = tw.writes()
	before := len(at)
	sent := time.Now()
	if err := w.Emit(&NodeStarted{NodeID: "b", NodeType: "set", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		at, lines := tw.writes()
		if len(at) > before {
			if lines[len(lines)-1] != 1 {
				t.Errorf("the line after the quiet spell went out with %d others", lines[len(lines)-1]-1)
			}
			// Once a burst has stretched the wait, the next line must not
			// wait the stretched one (8 intervals).
			if d := at[len(at)-1].Sub(sent); d > 8*interval && d > 50*time.Millisecond {
				t.Errorf("the line after a quiet spell waited %v", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the line after a quiet spell was never written")
		}
		time.Sleep(100 * time.Microsecond)
	}
	if err := w.Finish(&Result{Status: StatusCompleted, Output: json.RawMessage(`null`)}); err != nil {
		t.Fatal(err)
	}
}

// TestWriterAcceptedStartsInterval: the events right after accepted wait
// out FlushInterval with the others, rather than leave at once in a write
// of their own (accepted was the write before them).
func TestWriterAcceptedStartsInterval(t *testing.T) {
	tw := &timedWriter{}
	w := NewStreamWriter(t.Context(), tw, "x", nil, StreamOptions{FlushInterval: 300 * time.Millisecond})
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Emit(&NodeStarted{NodeID: "a", NodeType: "set", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if at, _ := tw.writes(); len(at) != 1 {
		t.Errorf("%d writes 50 ms after accepted and one event, want accepted's alone", len(at))
	}
	if err := w.Finish(&Result{Status: StatusCompleted, Output: json.RawMessage(`null`)}); err != nil {
		t.Fatal(err)
	}
	if _, lines := tw.writes(); len(lines) != 2 || lines[1] != 2 {
		t.Errorf("writes of %v lines, want [1 2]: the event with the result", lines)
	}
}

// gateWriter records writes; while gate is set, each write waits for it to
// be closed, announcing itself on entered first. It notes a write that
// began while another was in progress.
type gateWriter struct {
	mu         sync.Mutex
	buf        bytes.Buffer
	writes     int
	inFlight   int
	overlapped bool
	gate       chan struct{}
	entered    chan struct{}
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.inFlight++
	g.overlapped = g.overlapped || g.inFlight > 1
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.entered <- struct{}{}
		<-gate
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	g.writes++
	return g.buf.Write(p)
}

// TestWriterFinishAfterWriteInProgress: Finish, called while the flusher's
// write waits on the client, lets that write end first and then sends the
// rest and the terminal event in one write of its own: every line once, in
// order, no two writes at once.
func TestWriterFinishAfterWriteInProgress(t *testing.T) {
	gw := &gateWriter{entered: make(chan struct{}, 1)}
	w := NewStreamWriter(t.Context(), gw, "x", nil, StreamOptions{FlushInterval: time.Millisecond})
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	gw.mu.Lock()
	gw.gate = gate
	gw.mu.Unlock()
	emit := func(from, to int) {
		for i := from; i < to; i++ {
			if err := w.Emit(&NodeStarted{NodeID: fmt.Sprintf("n%d", i), NodeType: "set", Attempt: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	emit(0, 10)
	<-gw.entered // the flusher is writing, and waits
	gw.mu.Lock()
	gw.gate = nil // later writes pass
	gw.mu.Unlock()
	emit(10, 20)
	finished := make(chan error, 1)
	go func() { finished <- w.Finish(&Result{Status: StatusCompleted, Output: json.RawMessage(`null`)}) }()
	select {
	case err := <-finished:
		t.Fatalf("Finish returned (%v) while a write was in progress", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
	gw.mu.Lock()
	defer gw.mu.Unlock()
	if gw.overlapped {
		t.Error("two writes were in progress at once")
	}
	if gw.writes != 3 {
		t.Errorf("%d writes, want 3: accepted, the flusher's, and the rest with the result", gw.writes)
	}
	lines := strings.Split(strings.TrimSuffix(gw.buf.String(), "\n"), "\n")
	if len(lines) != 22 {
		t.Fatalf("%d lines, want 22", len(lines))
	}
	for i, l := range lines[1:21] {
		if !strings.Contains(l, fmt.Sprintf(`"nodeId":"n%d"`, i)) {
			t.Errorf("line %d = %s, want node n%d", i+1, l, i)
		}
	}
	if !strings.Contains(lines[21], `"type":"result"`) {
		t.Errorf("last line %s, want the result", lines[21])
	}
}

// TestWriterFinishWritesRestItself: Finish called while the flusher waits
// out its interval sends the rest and the terminal event in one write of
// its own; the flusher, woken, writes nothing more.
func TestWriterFinishWritesRestItself(t *testing.T) {
	gw := &gateWriter{entered: make(chan struct{}, 1)}
	w := NewStreamWriter(t.Context(), gw, "x", nil, StreamOptions{FlushInterval: time.Hour})
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := w.Emit(&NodeStarted{NodeID: fmt.Sprintf("n%d", i), NodeType: "set", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // the flusher waits out its hour
	gate := make(chan struct{})
	gw.mu.Lock()
	gw.gate = gate
	gw.mu.Unlock()
	finished := make(chan error, 1)
	go func() { finished <- w.Finish(&Result{Status: StatusCompleted, Output: json.RawMessage(`null`)}) }()
	<-gw.entered                      // Finish's write waits on the client
	time.Sleep(20 * time.Millisecond) // time for a woken flusher to write too
	close(gate)
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
	gw.mu.Lock()
	defer gw.mu.Unlock()
	if gw.overlapped || gw.writes != 2 {
		t.Errorf("%d writes (overlapping: %v), want 2: accepted, then the rest with the result", gw.writes, gw.overlapped)
	}
	lines := strings.Split(strings.TrimSuffix(gw.buf.String(), "\n"), "\n")
	if len(lines) != 7 || !strings.Contains(lines[6], `"type":"result"`) {
		t.Fatalf("%d lines, want 7 ending with the result:\n%s", len(lines), gw.buf.String())
	}
	for i, l := range lines[1:6] {
		if !strings.Contains(l, fmt.Sprintf(`"nodeId":"n%d"`, i)) {
			t.Errorf("line %d = %s, want node n%d", i+1, l, i)
		}
	}
}
