package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine"
)

// These tests drive run, main without the process: the environment is a map
// and the server listens on a free port of 127.0.0.1. (TestMain, with
// goleak, is in process_test.go.)

// runPatience bounds every wait on a running server.
const runPatience = 30 * time.Second

// runEnv is a fake environment. It always sets RUNNER_ADDR to a free port
// and, unless vars set it, RUNNER_CODE_WORKER to this test binary.
func runEnv(vars map[string]string) func(string) string {
	return func(name string) string {
		v, ok := vars[name]
		switch {
		case ok:
			return v
		case name == "RUNNER_ADDR":
			return "127.0.0.1:0"
		case name == "RUNNER_CODE_WORKER":
			return inProcessWorker()
		}
		return ""
	}
}

// keepMemoryLimit restores the process's memory limit and GC target,
// which run sets.
func keepMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	prevGC := debug.SetGCPercent(-1)
	debug.SetGCPercent(prevGC)
	t.Cleanup(func() { debug.SetMemoryLimit(prev); debug.SetGCPercent(prevGC) })
}

// watchedBuffer is an output of run that a test can wait on.
type watchedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // signalled on every write
}

func (b *watchedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return b.buf.Write(p)
}

func (b *watchedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// await waits until re matches one of the outputs, which share their
// changed channel, and returns the match.
func await(t *testing.T, re *regexp.Regexp, outs ...*watchedBuffer) []string {
	t.Helper()
	timeout := time.After(runPatience)
	for {
		for _, b := range outs {
			if m := re.FindStringSubmatch(b.String()); m != nil {
				return m
			}
		}
		select {
		case <-outs[0].changed:
		case <-timeout:
			t.Fatalf("no match for %s in the output", re)
		}
	}
}

var (
	listeningAt = regexp.MustCompile(`(http://127\.0\.0\.1:\d+)`)
	devTokenAt  = regexp.MustCompile(`dev token \(printed once\): (\S+)`)
)

// server is run serving in the background.
type server struct {
	stdout, stderr *watchedBuffer
	base           string
	client         *http.Client
}

// startRun starts run and returns once it listens; the test's cleanup stops
// it and checks that it returned nil.
func startRun(t *testing.T, args []string, vars map[string]string) *server {
	t.Helper()
	keepMemoryLimit(t)
	changed := make(chan struct{}, 1)
	s := &server{
		stdout: &watchedBuffer{changed: changed},
		stderr: &watchedBuffer{changed: changed},
		client: &http.Client{Transport: &http.Transport{}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, runEnv(vars), s.stdout, s.stderr) }()
	t.Cleanup(func() {
		s.client.CloseIdleConnections()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v after its context ended, want nil", err)
			}
		case <-time.After(runPatience):
			t.Errorf("run did not return within %s of its context ending", runPatience)
		}
	})
	// The dev banner (stdout) and the log line (stderr) both say where.
	s.base = await(t, listeningAt, s.stdout, s.stderr)[1]
	return s
}

// status returns the status of GET /v1/capabilities with token.
func (s *server) status(t *testing.T, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.base+"/v1/capabilities", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestRunRefusesToStartWithoutTokens(t *testing.T) {
	keepMemoryLimit(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), nil, runEnv(nil), &stdout, &stderr)
	if err == nil {
		t.Fatal("run started without any bearer token")
	}
	for _, want := range []string{"RUNNER_TOKENS", "RUNNER_TOKEN_SECRET_ID", "-dev"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("run printed %q before refusing", stdout.String())
	}
}

func TestRunConfigErrorsNameTheVariable(t *testing.T) {
	tests := []struct{ name, value string }{
		{"RUNNER_MAX_NODES", "lots"},
		{"RUNNER_TIMEOUT_SECONDS", "0"},
		{"RUNNER_LOG_LEVEL", "shouty"},
		{"RUNNER_TOKEN_CACHE_TTL", "forever"},
		{"RUNNER_MODELS", "["},
		{"RUNNER_HTTP_ALLOW_CIDRS", "intranet"},
		{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "big"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keepMemoryLimit(t)
			vars := map[string]string{tt.name: tt.value, "RUNNER_TOKENS": "tok"}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), nil, runEnv(vars), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.name) || !strings.HasPrefix(err.Error(), "configuration:") {
				t.Errorf("run error = %v, want a configuration error naming %s", err, tt.name)
			}
		})
	}
}

func TestRunRejectsUnknownFlags(t *testing.T) {
	keepMemoryLimit(t)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-verbose"}, runEnv(map[string]string{"RUNNER_TOKENS": "tok"}), &stdout, &stderr); err == nil {
		t.Fatal("run accepted an unknown flag")
	}
	if !strings.Contains(stderr.String(), "-dev") {
		t.Errorf("usage %q does not list -dev", stderr.String())
	}
}

func TestRunDevPrintsATokenOnce(t *testing.T) {
	s := startRun(t, []string{"-dev"}, nil)
	token := await(t, devTokenAt, s.stdout)[1]
	if !strings.HasPrefix(token, "dev_") || len(token) < 24 {
		t.Errorf("dev token %q is not a long random dev_ token", token)
	}
	if got := s.status(t, token); got != http.StatusOK {
		t.Errorf("the printed token: status %d, want 200", got)
	}
	if got := s.status(t, ""); got != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", got)
	}
	if got := s.status(t, "dev_guess"); got != http.StatusUnauthorized {
		t.Errorf("another token: status %d, want 401", got)
	}
	if n := strings.Count(s.stdout.String(), "dev token"); n != 1 {
		t.Errorf("the dev token was announced %d times, want once:\n%s", n, s.stdout)
	}
	if strings.Contains(s.stderr.String(), token) {
		t.Errorf("the token is in the logs:\n%s", s.stderr)
	}
}

// A dev server anywhere but the loopback says so: the playground's Host
// allowlist keeps pages out, not other machines holding the token.
func TestRunDevWarnsOffTheLoopback(t *testing.T) {
	for addr, warns := range map[string]bool{"127.0.0.1:0": false, "0.0.0.0:0": true} {
		t.Run(addr, func(t *testing.T) {
			s := startRun(t, []string{"-dev"}, map[string]string{"RUNNER_ADDR": addr})
			await(t, devTokenAt, s.stdout)
			if got := strings.Contains(s.stdout.String(), "is not the loopback"); got != warns {
				t.Errorf("warned %v, want %v:\n%s", got, warns, s.stdout)
			}
		})
	}
}

func TestRunHonoursRunnerTokens(t *testing.T) {
	for _, args := range [][]string{nil, {"-dev"}} {
		t.Run(strings.Join(append([]string{"args"}, args...), " "), func(t *testing.T) {
			s := startRun(t, args, map[string]string{"RUNNER_TOKENS": "alpha, beta"})
			for token, want := range map[string]int{"alpha": 200, "beta": 200, "gamma": 401, "alpha, beta": 401} {
				if got := s.status(t, token); got != want {
					t.Errorf("token %q: status %d, want %d", token, got, want)
				}
			}
			// Configured tokens are never replaced by a generated one.
			if devTokenAt.MatchString(s.stdout.String()) {
				t.Errorf("a dev token was generated although RUNNER_TOKENS is set:\n%s", s.stdout)
			}
			for _, tok := range []string{"alpha", "beta"} {
				if strings.Contains(s.stdout.String()+s.stderr.String(), tok) {
					t.Errorf("token %q appears in the output", tok)
				}
			}
		})
	}
}

func TestRunSetsTheMemoryLimit(t *testing.T) {
	tests := []struct {
		name   string
		vars   map[string]string
		want   int64 // -1: left as it was
		wantGC int   // -1: left as it was
	}{
		{"from the function's memory", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}, 1024 << 20 * 9 / 10, gcPercent},
		{"GOMEMLIMIT wins", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "GOMEMLIMIT": "300MiB"}, -1, gcPercent},
		{"no memory size: the engine's default", nil, engine.DefaultMemoryMB << 20 * 9 / 10, gcPercent},
		{"GOGC wins", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "GOGC": "100"}, 1024 << 20 * 9 / 10, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keepMemoryLimit(t)
			const sentinel, sentinelGC = 1 << 40, 123
			debug.SetMemoryLimit(sentinel)
			debug.SetGCPercent(sentinelGC)
			// Without tokens run stops right after setting the limit.
			var stdout, stderr bytes.Buffer
			_ = run(context.Background(), nil, runEnv(tt.vars), &stdout, &stderr)
			want, wantGC := tt.want, tt.wantGC
			if want < 0 {
				want = sentinel
			}
			if wantGC < 0 {
				wantGC = sentinelGC
			}
			if got := debug.SetMemoryLimit(-1); got != want {
				t.Errorf("memory limit = %d, want %d", got, want)
			}
			if got := debug.SetGCPercent(sentinelGC); got != wantGC {
				t.Errorf("GC percent = %d, want %d", got, wantGC)
			}
		})
	}
}
