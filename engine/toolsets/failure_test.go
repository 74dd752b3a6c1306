package toolsets

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runnerd/lambda-runner/protocol"
)

// hangLimit is far above any expected failure time, far below a hang.
const hangLimit = 5 * time.Second

func TestCallFailures(t *testing.T) {
	srv := newTestServer(t, 0, false)
	set := newSet(t,
		protocol.Toolset{Name: "math", URL: srv.URL},
		protocol.Toolset{Name: "quick", URL: srv.URL, TimeoutMs: 200},
	)

	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		toolset string
		tool    string
		want    error // errors.Is target
	}{
		{
			name:    "unknown toolset",
			ctx:     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			toolset: "nope", tool: "add",
			want: ErrUnknownToolset,
		},
		{
			name:    "toolset timeout",
			ctx:     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			toolset: "quick", tool: "block",
			want: ErrTimeout,
		},
		{
			name: "caller deadline",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 150*time.Millisecond)
			},
			toolset: "math", tool: "block",
			want: context.DeadlineExceeded,
		},
		{
			name: "caller cancels",
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(150*time.Millisecond, cancel)
				return ctx, cancel
			},
			toolset: "math", tool: "block",
			want: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			res, err := set.Call(ctx, tt.toolset, tt.tool, nil)
			if err == nil {
				t.Fatalf("Call = %+v, want an error", res)
			}
			if d := time.Since(start); d > hangLimit {
				t.Errorf("Call took %v", d)
			}
			e := asError(t, err)
			if e.Toolset != tt.toolset || e.Tool != tt.tool {
				t.Errorf("error names %q/%q, want %q/%q", e.Toolset, e.Tool, tt.toolset, tt.tool)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("error %v is not %v", err, tt.want)
			}
		})
	}

	// None of that broke the session.
	if _, err := set.Call(t.Context(), "math", "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}
	if got := len(srv.sessionIDs()); got != 2 { // math and quick
		t.Errorf("%d sessions, want 2", got)
	}
}

func TestServerGone(t *testing.T) {
	srv := newTestServer(t, 0, false)
	set := newSet(t, protocol.Toolset{Name: "math", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer gone-secret-93"}})
	if _, err := set.Call(t.Context(), "math", "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}

	srv.stop()
	for _, op := range []string{"call", "list", "call again"} {
		start := time.Now()
		var err error
		if op == "list" {
			// The list was not fetched yet, so this goes to the server.
			_, err = set.Tools(t.Context(), "math")
		} else {
			_, err = set.Call(t.Context(), "math", "add", map[string]any{"a": 1, "b": 1})
		}
		if d := time.Since(start); d > hangLimit {
			t.Errorf("%s took %v", op, d)
		}
		e := asError(t, err)
		if e.Toolset != "math" || strings.Contains(err.Error(), "gone-secret-93") {
			t.Errorf("%s: error %v", op, err)
		}
	}

	start := time.Now()
	_ = set.Close() // the server cannot be told; Close must not hang on it
	if d := time.Since(start); d > hangLimit {
		t.Errorf("Close took %v", d)
	}
}

// TestServerRestart: a server that forgets the session gets a new one, once.
func TestServerRestart(t *testing.T) {
	srv := newTestServer(t, 0, false)
	set := newSet(t, protocol.Toolset{Name: "math", URL: srv.URL})
	call := func() error {
		_, err := set.Call(t.Context(), "math", "add", map[string]any{"a": 1, "b": 1})
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}

	// The server answers 404 for the old session, so the call never ran
	// and is made again on a new session.
	srv.restart()
	if err := call(); err != nil {
		t.Fatalf("call after a restart: %v", err)
	}
	if got := srv.count("initialize"); got != 2 {
		t.Errorf("initialize requests = %d, want 2", got)
	}
	if got := srv.count("tools/call"); got != 3 { // ok, refused with 404, ok
		t.Errorf("tools/call requests = %d, want 3", got)
	}
	if err := call(); err != nil {
		t.Fatalf("second call on the new session: %v", err)
	}

	// The reconnect is spent: the next restart fails the call, and later
	// calls fail at once without a request.
	srv.restart()
	err := call()
	if e := asError(t, err); errors.Is(err, ErrUnavailable) || !strings.Contains(e.Message, "session not found") {
		t.Errorf("call after a second restart: %v", err)
	}
	before := len(srv.recorded())
	err = call()
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("call with no session left: %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "session not found") {
		t.Errorf("error %q does not say why the toolset is unavailable", err)
	}
	if n := len(srv.recorded()) - before; n != 0 {
		t.Errorf("%d requests sent for an unavailable toolset", n)
	}
}

func TestConnectFailure(t *testing.T) {
	// A port that refuses connections: a server started then closed.
	dead := httptest.NewServer(nil)
	dead.Close()
	// A server that accepts and never answers.
	release := make(chan struct{})
	hang := httptest.NewServer(blockUntil(release))
	t.Cleanup(func() { close(release); hang.CloseClientConnections(); hang.Close() })

	tests := []struct {
		name     string
		url      string
		wantMsg  string
		wantLast error // errors.Is target of the second attempt
	}{
		{"refused", dead.URL, "connecting:", nil},
		{"no answer", hang.URL, "timed out", ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(t, protocol.Toolset{Name: "x", URL: tt.url, TimeoutMs: 200})
			for i := range maxSessions {
				waitIdle(t, set, "x")
				start := time.Now()
				_, err := set.Tools(t.Context(), "x")
				if d := time.Since(start); d > hangLimit {
					t.Errorf("attempt %d took %v", i, d)
				}
				if e := asError(t, err); !strings.Contains(e.Message, tt.wantMsg) || errors.Is(err, ErrUnavailable) {
					t.Errorf("attempt %d: %v, want a message with %q", i, err, tt.wantMsg)
				}
				if tt.wantLast != nil && !errors.Is(err, tt.wantLast) {
					t.Errorf("attempt %d: %v is not %v", i, err, tt.wantLast)
				}
			}
			waitIdle(t, set, "x")
			start := time.Now()
			_, err := set.Call(t.Context(), "x", "add", nil)
			if !errors.Is(err, ErrUnavailable) || time.Since(start) > 100*time.Millisecond {
				t.Errorf("after %d failed connects: %v in %v, want ErrUnavailable at once", maxSessions, err, time.Since(start))
			}
		})
	}
}

// TestClose: Close ends every session, the calls in flight and every
// goroutine and connection the Set started.
func TestClose(t *testing.T) {
	srv := newTestServer(t, 0, false)
	// Goroutines of the server and of the test framework are not the Set's.
	baseline := goleak.IgnoreCurrent()

	set := New([]protocol.Toolset{
		{Name: "a", URL: srv.URL},
		{Name: "b", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer x-123456"}},
	}, Options{})
	for _, name := range []string{"a", "b"} {
		if _, err := set.Tools(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	inFlight := make(chan error, 1)
	go func() {
		_, err := set.Call(context.Background(), "a", "block", nil)
		inFlight <- err
	}()
	waitFor(t, func() bool { return srv.count("tools/call") == 1 })

	closed := make(chan error, 1)
	go func() { closed <- set.Close() }()
	select {
	case err := <-inFlight:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("call in flight during Close: %v, want ErrClosed", err)
		}
	case <-time.After(hangLimit):
		t.Fatal("the call in flight did not end with Close")
	}
	// The SDK's server holds the DELETE until the session's tools return;
	// let the blocked one go, as a tool would on the cancellation.
	srv.unblock()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(hangLimit):
		t.Fatal("Close did not return")
	}
	if got := srv.count("DELETE"); got != 2 {
		t.Errorf("DELETE requests = %d, want 2 (one per session)", got)
	}
	if err := set.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	_, err := set.Call(t.Context(), "a", "add", nil)
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close: %v, want ErrClosed", err)
	}
	goleak.VerifyNone(t, baseline)
}

// TestCloseDuringConnect: Close aborts a connect that is waiting on the
// server, and the callers waiting for it.
func TestCloseDuringConnect(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(blockUntil(release))
	t.Cleanup(func() { close(release); hang.CloseClientConnections(); hang.Close() })

	set := New([]protocol.Toolset{{Name: "x", URL: hang.URL}}, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := set.Tools(context.Background(), "x")
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the connect start
	start := time.Now()
	if err := set.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > hangLimit {
		t.Errorf("Close took %v", d)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("waiting caller: %v, want ErrClosed", err)
		}
	case <-time.After(hangLimit):
		t.Fatal("the caller waiting for the connect did not return")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitIdle waits until toolset name has no session and no connect in
// progress: a connect that times out may outlive its caller by a hair, and
// a caller coming in that instant would wait for it instead of starting the
// next connect.
func waitIdle(t *testing.T, set *Set, name string) {
	t.Helper()
	ts := set.toolsets[name]
	waitFor(t, func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.cur == nil
	})
}
