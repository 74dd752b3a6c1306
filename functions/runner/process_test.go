//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/sandbox/worker"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// An in-process runner's code nodes start this binary as their worker
	// (RUNNER_CODE_WORKER=os.Args[0], set by the tests' configurations).
	if worker.Requested(os.Args) {
		worker.Main(os.Args)
	}
	code := m.Run()
	removeBuiltBootstrap()
	if code == 0 {
		// Every goroutine a test started (adapters, fake servers, process
		// pipes) has ended.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// built is the bootstrap built once per test binary when make did not
// provide one.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// bootstrapPath returns the runner built as Lambda runs it: the binary in
// RUNNER_TEST_BOOTSTRAP (make test builds it), else one built here.
func bootstrapPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("RUNNER_TEST_BOOTSTRAP"); p != "" {
		return p
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "runner-bootstrap-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", built.path, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("building the bootstrap: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// builtWorker is the code nodes' worker built once per test binary when
// make did not provide one.
var builtWorker struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// codeWorkerPath returns the code nodes' worker executable
// (functions/codeworker) for the bootstraps the tests start: the binary in
// RUNNER_TEST_CODE_WORKER (make test builds it), else one built here.
// lambdaEnv passes it as RUNNER_CODE_WORKER; a test of the Lambda
// package's own layout (codeworker beside bootstrap) removes that.
func codeWorkerPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("RUNNER_TEST_CODE_WORKER"); p != "" {
		return p
	}
	builtWorker.once.Do(func() {
		if builtWorker.dir, builtWorker.err = os.MkdirTemp("", "runner-codeworker-"); builtWorker.err != nil {
			return
		}
		builtWorker.path = filepath.Join(builtWorker.dir, "codeworker")
		cmd := exec.Command("go", "build", "-o", builtWorker.path, "../codeworker")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOEXPERIMENT=nogreenteagc") // as the Makefile builds it
		if out, err := cmd.CombinedOutput(); err != nil {
			builtWorker.err = fmt.Errorf("building the code worker: %v\n%s", err, out)
		}
	})
	if builtWorker.err != nil {
		t.Fatal(builtWorker.err)
	}
	return builtWorker.path
}

// inProcessWorker is RUNNER_CODE_WORKER for a runner built in this test
// process: the test binary itself, whose TestMain serves as the worker.
func inProcessWorker() string { return os.Args[0] }

func removeBuiltBootstrap() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	if builtWorker.dir != "" {
		os.RemoveAll(builtWorker.dir)
	}
}

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// jsonLines returns the output lines that are JSON objects.
func (b *syncBuffer) jsonLines() []map[string]any {
	var out []map[string]any
	for _, l := range bytes.Split([]byte(b.String()), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// waitFor polls the output until some JSON line satisfies ok: a process
// writes its logs asynchronously to the reply.
func (b *syncBuffer) waitFor(t testing.TB, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ; {
		for _, l := range b.jsonLines() {
			if ok(l) {
				return l
			}
		}
		if time.Now().After(end) {
			t.Fatalf("no %s in the output:\n%s", what, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startProcess starts name in its own process group, which the test's
// cleanup kills whole. The emulator starts the bootstrap in a group of its
// own; that one exits by itself as soon as its runtime API (the emulator)
// is gone, which Wait sees, since it holds the output pipe until then.
// stop (also run at cleanup) ends it early.
func startProcess(t testing.TB, env map[string]string, name string, args ...string) (out *syncBuffer, stop func()) {
	t.Helper()
	out = &syncBuffer{}
	cmd := exec.Command(name, args...)
	cmd.Dir = t.TempDir()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	slices.Sort(cmd.Env)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("%s output:\n%s", filepath.Base(name), out.String())
			}
		})
	}
	t.Cleanup(stop)
	return out, stop
}

// freeAddr returns a 127.0.0.1 address nothing listens on right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// lambdaEnv is a hermetic environment for the bootstrap: no shared AWS
// configuration, no instance metadata, static tokens, and the function
// settings capabilities report.
func lambdaEnv(t testing.TB, extra map[string]string) map[string]string {
	dir := t.TempDir()
	env := map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"HOME":                            dir,
		"AWS_CONFIG_FILE":                 filepath.Join(dir, "no-config"),
		"AWS_SHARED_CREDENTIALS_FILE":     filepath.Join(dir, "no-credentials"),
		"AWS_EC2_METADATA_DISABLED":       "true",
		"AWS_REGION":                      "eu-west-1",
		"AWS_LAMBDA_FUNCTION_NAME":        "runner",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     "60",
		"RUNNER_TIMEOUT_SECONDS":          "60",
		"RUNNER_TOKENS":                   testToken,
		"RUNNER_CODE_WORKER":              codeWorkerPath(t),
		// The emulator's own log level (the bootstrap sees it too and
		// ignores it).
		"LOG_LEVEL": "warn",
	}
	for k, v := range extra {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	return env
}

// checkStream checks an NDJSON event stream against the protocol: every
// line one event of version 1 with a type, an executionId and a time;
// accepted first; exactly one terminal event (result or error), last.
// It returns the events.
func checkStream(t testing.TB, body []byte) []map[string]any {
	t.Helper()
	lines := bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
	var evs []map[string]any
	terminals := 0
	for i, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("line %d is not a JSON object: %q", i+1, l)
		}
		if ev["version"] != float64(1) || ev["type"] == nil || ev["executionId"] == nil || ev["at"] == nil {
			t.Errorf("line %d lacks version 1, type, executionId or at: %s", i+1, l)
		}
		if len(evs) > 0 && ev["executionId"] != evs[0]["executionId"] {
			t.Errorf("line %d: executionId %v, the stream's is %v", i+1, ev["executionId"], evs[0]["executionId"])
		}
		if ev["type"] == "result" || ev["type"] == "error" {
			terminals++
			if i != len(lines)-1 {
				t.Errorf("terminal event on line %d of %d", i+1, len(lines))
			}
		}
		evs = append(evs, ev)
	}
	if evs[0]["type"] != "accepted" {
		t.Errorf("first event is %v, want accepted", evs[0]["type"])
	}
	if terminals != 1 {
		t.Errorf("%d terminal events, want exactly 1:\n%s", terminals, body)
	}
	return evs
}
