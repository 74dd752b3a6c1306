package functions_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/infra/tokens"
	"github.com/runnerd/lambda-runner/protocol"
)

// TestHostileSlowReader: a client that stops reading cannot keep its
// execution alive past the deadline (issue 45, class 3: 3,000 traced set
// nodes and a client pausing 12 s ended at +12 s with a 4.5 s deadline).
// Over loopback TCP, with a small receive buffer, the client reads the
// head of the stream and then nothing until well after the end: the
// execution must be over by its end (deadline + reserve, with 0.5 s of
// slack), when the server gives the connection up, and what the client
// finds afterwards must hold few node events stamped after the deadline.
func TestHostileSlowReader(t *testing.T) {
	if testing.Short() {
		t.Skip("waits several seconds")
	}
	const (
		maxDuration = 2 * time.Second
		reserve     = 500 * time.Millisecond
		slack       = 500 * time.Millisecond
	)
	for _, tt := range []struct {
		name   string
		nodes  int
		size   int // bytes of the value each node passes on
		markup bool
		sndbuf int // the server's socket send buffer (0: the system's)
	}{
		{"3000 traced set nodes", 3000, 2048, false, 0},
		{"1000 traced set nodes passing markup", 1000, 4096, true, 0},
		// What is left to write at the deadline cannot all fit in the
		// sockets' buffers: the connection is given up at the end.
		{"3000 traced set nodes, small send buffer", 3000, 2048, false, 16 << 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lim := engine.DefaultLimits()
			lim.MaxDuration, lim.Reserve = maxDuration, reserve
			var finished, closed atomic.Int64 // when the execution was over, when the server closed the connection
			h := &functions.Handler{
				Tokens:         tokens.Static{Set: tokens.NewSet(goodToken)},
				Engine:         engine.New(lim),
				MaxStreamBytes: 1 << 30,
				OnExecution: func(context.Context, protocol.Summary) {
					finished.Store(time.Now().UnixNano())
				},
			}
			srv := httptest.NewUnstartedServer(h)
			srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
				if st == http.StateNew && tt.sndbuf > 0 {
					_ = c.(*net.TCPConn).SetWriteBuffer(tt.sndbuf)
				}
				if st == http.StateClosed {
					closed.CompareAndSwap(0, time.Now().UnixNano())
				}
			}
			srv.Start()
			defer srv.Close()

			conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.(*net.TCPConn).SetReadBuffer(32 << 10)
			body := slowReaderBody(tt.nodes, tt.size, tt.markup)
			req, _ := http.NewRequest(http.MethodPost, srv.URL+protocol.PathExecutions, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+goodToken)
			req.Header.Set("Content-Type", protocol.ContentTypeJSON)
			if err := req.Write(conn); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReaderSize(conn, 4096)
			res, err := http.ReadResponse(br, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			lines := bufio.NewReader(res.Body)
			first, err := lines.ReadString('\n')
			var acc struct{ Type, At string }
			if err != nil || json.Unmarshal([]byte(first), &acc) != nil || acc.Type != "accepted" {
				t.Fatalf("first line %q, %v", first, err)
			}
			// The execution's clock starts when it is accepted (the body
			// read and prepared first is not its time).
			t0, _ := time.Parse(time.RFC3339Nano, acc.At)
			t0 = t0.Add(-time.Millisecond) // "at" has milliseconds
			deadline, end := t0.Add(maxDuration-reserve), t0.Add(maxDuration)

			// The client stops reading.
			time.Sleep(time.Until(end.Add(2 * time.Second)))
			if f := finished.Load(); f == 0 || time.Unix(0, f).After(end.Add(slack)) {
				t.Errorf("execution over at %s, want by its end +%v and %v", since(f, t0), maxDuration, slack)
			}
			// It reads again: what the kernel still holds of the stream.
			_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			late, events, terminal := 0, 0, ""
			for {
				line, err := lines.ReadString('\n')
				if err != nil {
					break
				}
				var e struct{ Type, At string }
				if json.Unmarshal([]byte(line), &e) != nil {
					continue
				}
				events++
				at, _ := time.Parse(time.RFC3339Nano, e.At)
				switch e.Type {
				case "result", "error":
					terminal = e.Type
					if at.After(end) {
						t.Errorf("terminal event at +%v, after the end", at.Sub(t0))
					}
				default:
					if at.After(deadline) {
						late++
					}
				}
			}
			// The terminal event went out, or the connection was given up
			// at the end.
			if c := closed.Load(); terminal == "" && (c == 0 || time.Unix(0, c).After(end.Add(slack))) {
				t.Errorf("no terminal event, and the connection closed at %s, want by its end +%v and %v", since(c, t0), maxDuration, slack)
			}
			// Past the deadline no Emit waits: what is written then is
			// what the nodes under way when it came report.
			if late > 32 {
				t.Errorf("%d node events after the deadline, want at most 32", late)
			}
			t.Logf("over at %s, connection closed at %s; the client then read %d events, %d after the deadline, terminal %q",
				since(finished.Load(), t0), since(closed.Load(), t0), events, late, terminal)
		})
	}
}

// since formats the time ns (Unix nanoseconds, 0 for never) from t0.
func since(ns int64, t0 time.Time) string {
	if ns == 0 {
		return "never"
	}
	return fmt.Sprintf("+%v", time.Unix(0, ns).Sub(t0))
}

// slowReaderBody is a chain of n traced set nodes, each passing on a
// string of size bytes (of '<' when markup, which JSON escapes sixfold).
func slowReaderBody(n, size int, markup bool) string {
	c := "x"
	if markup {
		c = "<"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"version":1,"trace":true,"workflow":{"nodes":[{"id":"n0","type":"set","with":{"value":%q}}`, strings.Repeat(c, size))
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `,{"id":"n%d","type":"set","needs":["n%d"],"with":{"value":"${{ nodes.n%d.output }}"}}`, i, i-1, i-1)
	}
	fmt.Fprintf(&b, `],"output":"${{ nodes.n%d.output }}"}}`, n-1)
	return b.String()
}
