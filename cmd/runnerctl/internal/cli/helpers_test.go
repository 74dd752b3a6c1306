package cli_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/cli"
	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/infra/tokens"
	"github.com/runnerd/lambda-runner/protocol"
)

const testToken = "tok_cli_test"

// newRunner serves the runner's own handler on 127.0.0.1 with testToken.
func newRunner(t *testing.T) *httptest.Server {
	t.Helper()
	eng := engine.New(engine.DefaultLimits())
	h := &functions.Handler{
		Tokens: tokens.Static{Set: tokens.NewSet(testToken)},
		Engine: eng,
		Capabilities: protocol.Capabilities{
			Version:          protocol.Version,
			ProtocolVersions: []int{protocol.Version},
			Runner:           protocol.RunnerInfo{Name: "cli-test", Version: "0"},
			NodeTypes:        eng.NodeTypes(),
			Runtime:          protocol.RuntimeCapabilities{Consent: "suspend", Workflows: true},
			Streaming:        protocol.Streaming{ContentType: protocol.ContentTypeNDJSON},
			Constraints:      protocol.Constraints{MaxDurationMs: 899_500, MemoryMb: 512, MaxRequestBytes: 6 << 20},
		},
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// result is one runnerctl invocation.
type result struct {
	code     int
	out, err string
}

func env(url, token string) func(string) string {
	return func(k string) string {
		switch k {
		case "RUNNER_URL":
			return url
		case "RUNNER_TOKEN":
			return token
		}
		return ""
	}
}

// runPipe runs runnerctl with its standard output a pipe, as in a script.
func runPipe(t *testing.T, getenv func(string) string, stdin string, args ...string) result {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&out, r); close(copied) }()
	var stderr bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{In: bytes.NewBufferString(stdin), Out: w, Err: &stderr, Getenv: getenv})
	w.Close()
	<-copied
	r.Close()
	return result{code, out.String(), stderr.String()}
}

// runPTY runs runnerctl with its standard output a real pseudo-terminal of
// 100x30 and returns what the terminal received.
func runPTY(t *testing.T, getenv func(string) string, args ...string) result {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	var stderr bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Env{In: &bytes.Buffer{}, Out: tty, Err: &stderr, Getenv: getenv})
	// Let the terminal drain what was written before closing its far end.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := out.Len()
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		same := out.Len() == n
		mu.Unlock()
		if same || time.Now().After(deadline) {
			break
		}
	}
	tty.Close()
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
		ptmx.Close()
		<-copied
	}
	mu.Lock()
	defer mu.Unlock()
	return result{code, out.String(), stderr.String()}
}

// cannedRunner answers every execution with body as the stream.
func cannedRunner(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", protocol.ContentTypeNDJSON)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}
