package functions_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// The load test of issue 9: 1,000 executions at once against the real
// handler behind a real net/http server, each over its own loopback TCP
// connection, all released together. Every one must complete with its own
// output (no cross-talk between executions), none may fail, and once they
// are done the goroutines return to the baseline. It is bounded (a fixed
// number of requests, each under a context timeout) and skipped under
// -short. Helpers are prefixed load.

const loadExecutions = 1000

// loadBody is a small fan-out and merge whose output is 3*i, so that each
// reply proves it belongs to its own request.
func loadBody(i int) []byte {
	return fmt.Appendf(nil, `{"version":1,"input":{"i":%d},"workflow":{"nodes":[
		{"id":"a","type":"set","with":{"value":"${{ input.i }}"}},
		{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output * 2 }}"}},
		{"id":"c","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output }}"}},
		{"id":"d","type":"set","needs":["b","c"],"with":{"value":"${{ nodes.b.output + nodes.c.output }}"}}],
		"output":"${{ nodes.d.output }}"}}`, i)
}

func TestLoadConcurrentExecutions(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: skipped under -short")
	}
	srv := httptest.NewUnstartedServer(newHandler(t, nil))
	srv.Config.ReadHeaderTimeout = 10 * time.Second // as serveLocal
	srv.Start()
	transport := &http.Transport{MaxIdleConnsPerHost: loadExecutions, MaxConnsPerHost: 0}
	client := &http.Client{Transport: transport}
	time.Sleep(20 * time.Millisecond)
	baseline := runtime.NumGoroutine()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		failures atomic.Int32
		mu       sync.Mutex
		first    []string // the first few failures
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 5 {
			mu.Lock()
			first = append(first, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
	}
	began := time.Now()
	for i := range loadExecutions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+protocol.PathExecutions, bytes.NewReader(loadBody(i)))
			if err != nil {
				fail("request %d: %v", i, err)
				return
			}
			req.Header.Set("Authorization", "Bearer "+goodToken)
			req.Header.Set("Content-Type", protocol.ContentTypeJSON)
			<-start
			resp, err := client.Do(req)
			if err != nil {
				fail("request %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			last, err := lastLine(resp.Body)
			want := fmt.Sprintf(`"output":%d`, 3*i)
			if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(last, []byte(`"status":"completed"`)) || !bytes.Contains(last, []byte(want)) {
				fail("request %d: status %d, err %v, last line %.300s", i, resp.StatusCode, err, last)
			}
		}()
	}
	close(start)
	wg.Wait()
	took := time.Since(began)
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d executions failed; first: %q", n, loadExecutions, first)
	}
	t.Logf("%d concurrent executions in %v", loadExecutions, took)

	// Everything the executions started has ended: the connections are
	// closed on both sides, and the goroutines are back to the baseline.
	transport.CloseIdleConnections()
	srv.CloseClientConnections()
	srv.Close()
	deadline := time.Now().Add(5 * time.Second)
	for g := runtime.NumGoroutine(); g > baseline; g = runtime.NumGoroutine() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, baseline %d:\n%s", g, baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
