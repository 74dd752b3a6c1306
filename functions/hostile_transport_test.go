package functions_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Hostile transport: clients that trickle a body, unauthenticated or not,
// must be answered promptly and their connections closed, so neither file
// descriptors nor goroutines pile up. Helpers are prefixed transport.

// transportServer serves a handler with a short body deadline and returns
// its address and log buffer.
func transportServer(t *testing.T) (string, *syncBuffer) {
	t.Helper()
	h := newHandler(t, nil)
	h.BodyReadTimeout = 300 * time.Millisecond
	logs := &syncBuffer{}
	h.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), logs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// transportTrickle sends head, then one body byte (as a chunk when chunked)
// every 20 ms for at most 5 s, while reading the reply. It returns the
// status line, how long it took to arrive, and whether the server then
// closed the connection.
func transportTrickle(t *testing.T, addr, head string, chunked bool) (status string, took time.Duration, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 250; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			piece := "x"
			if chunked {
				piece = "1\r\nx\r\n"
			}
			if _, err := io.WriteString(conn, piece); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	took = time.Since(start)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// EOF, or a reset when the server closed with our bytes unread; a
	// timeout means the connection was kept open.
	_, err = br.ReadByte()
	var ne net.Error
	return resp.Status, took, err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestHostileTransport(t *testing.T) {
	addr, logs := transportServer(t)
	const bigID = "amzn-"
	longID := bigID + strings.Repeat("z", 100_000)
	tests := []struct {
		name, head string
		chunked    bool
		status     string
		within     time.Duration
	}{
		{"no token, chunked, no Expect",
			"POST /v1/executions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", true, "401", time.Second},
		{"bad token, chunked",
			"POST /v1/executions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope-not-it\r\nTransfer-Encoding: chunked\r\n\r\n", true, "401", time.Second},
		{"no token, large Content-Length",
			"POST /v1/executions HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n", false, "401", time.Second},
		{"good token, unknown route, chunked",
			"POST /v1/nowhere HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + goodToken + "\r\nTransfer-Encoding: chunked\r\n\r\n", true, "404", time.Second},
		{"good token, trickled chunked body",
			"POST /v1/executions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + goodToken + "\r\nTransfer-Encoding: chunked\r\n\r\n", true, "408", 3 * time.Second},
		{"good token, trickled body, huge X-Amzn-Request-Id",
			"POST /v1/executions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + goodToken + "\r\nX-Amzn-Request-Id: " + longID + "\r\nContent-Length: 100000\r\n\r\n", false, "408", 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, took, closed := transportTrickle(t, addr, tt.head, tt.chunked)
			if !strings.HasPrefix(status, tt.status) || took > tt.within || !closed {
				t.Errorf("got %q after %v, closed %v; want %s within %v and the connection closed", status, took, closed, tt.status, tt.within)
			}
			// The runner still serves the next request.
			resp, err := http.Post("http://"+addr+"/v1/executions", "application/json", strings.NewReader(minimalBody))
			if err == nil {
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("next request: %v %v", resp, err)
			}
		})
	}
	if l := logs.String(); strings.Contains(l, longID[:200]) || strings.Contains(l, goodToken) || strings.Contains(l, "nope-not-it") {
		t.Errorf("logs hold the long request id or a token")
	}
}

// Many trickling clients at once: each is answered and its connection
// closed, so descriptors and goroutines return to the baseline.
func TestHostileTransportManyTricklers(t *testing.T) {
	addr, _ := transportServer(t)
	time.Sleep(50 * time.Millisecond)
	fds, gs := transportFDs(), runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			head := "POST /v1/executions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
			if i%2 == 1 {
				head = "POST /v1/executions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + goodToken + "\r\nTransfer-Encoding: chunked\r\n\r\n"
			}
			status, _, closed := transportTrickle(t, addr, head, true)
			if !closed || !(strings.HasPrefix(status, "401") || strings.HasPrefix(status, "408")) {
				t.Errorf("client %d: %q, closed %v", i, status, closed)
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, g := transportFDs(), runtime.NumGoroutine()
		if f <= fds+2 && g <= gs+2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("descriptors %d (baseline %d), goroutines %d (baseline %d)", f, fds, g, gs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// transportFDs counts this process's open file descriptors (Linux), or 0.
func transportFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}
