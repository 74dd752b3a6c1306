package worker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/sandbox"
)

// testPool is a pool whose workers are this test binary (TestMain).
func testPool(t testing.TB, workers int) *sandbox.Pool {
	t.Helper()
	return poolOf(t, testBinary(), workers)
}

// poolOf is a pool of workers running the executable at path, closed
// when the test ends.
func poolOf(t testing.TB, path string, workers int) *sandbox.Pool {
	t.Helper()
	p := &sandbox.Pool{Options: sandbox.Options{Path: path, Workers: workers}}
	t.Cleanup(p.Close)
	return p
}

// testBinary is this test binary, which TestMain makes a worker.
func testBinary() string { return os.Args[0] }

func request(code string) sandbox.Request {
	return sandbox.Request{Code: code, Input: []byte(`{"n":3}`), MaxOutputBytes: 4 << 20, MaxLogBytes: 64 << 10}
}

func TestEval(t *testing.T) {
	p := testPool(t, 1)
	cases := []struct {
		name, code, want string
		logs             []string
		kind             sandbox.Kind
		line             int
		msg              string
	}{
		{name: "input", code: "return input.n * 2", want: "6"},
		{name: "undefined is null", code: "", want: "null"},
		{name: "object", code: "return {a: [1, 'x'], b: null}", want: `{"a":[1,"x"],"b":null}`},
		{name: "es2015+", code: "const {n} = input; return [...Array(n).keys()].map(i => `#${i}`)", want: `["#0","#1","#2"]`},
		{name: "async", code: "return (async () => (await Promise.resolve(input.n)) + 1)()", want: "4"},
		{name: "console", code: "console.log('n is', input.n, {a: 1}); console.error('e'); return 1", want: "1", logs: []string{`n is 3 {"a":1}`, "e"}},
		{name: "throw", code: "const x = 1;\nthrow new TypeError('bad ' + x)", kind: sandbox.KindThrown, line: 2, msg: "Uncaught TypeError: bad 1"},
		{name: "thrown string", code: "throw 'plain'", kind: sandbox.KindThrown, line: 1, msg: "Uncaught plain"},
		{name: "rejected", code: "return Promise.reject(new Error('no'))", kind: sandbox.KindThrown, msg: "Uncaught Error: no"},
		{name: "pending", code: "return new Promise(() => {})", kind: sandbox.KindThrown, msg: "did not settle"},
		{name: "bigint", code: "return 1n", kind: sandbox.KindThrown, msg: "BigInt"},
		{name: "cycle", code: "const a = {}; a.a = a; return a", kind: sandbox.KindThrown},
		{name: "syntax", code: "return (", kind: sandbox.KindThrown, msg: "SyntaxError"},
		{name: "no require", code: "return require('fs')", kind: sandbox.KindThrown, msg: "require is not defined"},
		{name: "no timers", code: "setTimeout(() => {}, 1)", kind: sandbox.KindThrown, msg: "setTimeout is not defined"},
		{name: "recursion", code: "function f() { return f() + 1 } return f()", kind: sandbox.KindStack},
		{name: "caught recursion is still the limit", code: "function f() { try { return f() } catch (e) { return 0 } } return f()", kind: sandbox.KindStack},
		{name: "output", code: "return 'x'.repeat(5 << 20)", kind: sandbox.KindOutput},
		{name: "logs", code: "for (;;) console.log('x'.repeat(1000))", kind: sandbox.KindLogs},
		// Issue 45: what the code throws while its result is read is the
		// code's error, not the engine's.
		{name: "getter throws", code: "return {get x() { throw new Error('e') }}", kind: sandbox.KindThrown, msg: "Uncaught Error: e"},
		{name: "getter throws a number", code: "return {get x() { throw 42 }}", kind: sandbox.KindThrown, msg: "Uncaught 42"},
		{name: "getter throws an object", code: "return {get x() { throw {toString() { return 'obj' }} }}", kind: sandbox.KindThrown, msg: "Uncaught obj"},
		{name: "toJSON throws", code: "return {toJSON() { throw new RangeError('no json') }}", kind: sandbox.KindThrown, msg: "RangeError: no json"},
		{name: "nested getter throws", code: "return [1, {a: {get b() { throw new Error('deep') }}}]", kind: sandbox.KindThrown, msg: "deep"},
		{name: "proxy get trap throws", code: "return new Proxy({a: 1}, {get() { throw new Error('trap') }})", kind: sandbox.KindThrown, msg: "trap"},
		{name: "proxy ownKeys trap throws", code: "return new Proxy({}, {ownKeys() { throw new Error('keys') }})", kind: sandbox.KindThrown, msg: "keys"},
		{name: "proxy of an array whose get trap throws", code: "return new Proxy([1], {get(t, k) { if (k === '0') throw new Error('idx'); return Reflect.get(t, k) }})", kind: sandbox.KindThrown, msg: "idx"},
		{name: "promise of a throwing getter", code: "return Promise.resolve({get x() { throw new Error('later') }})", kind: sandbox.KindThrown, msg: "later"},
		{name: "then getter throws", code: "return {get then() { throw new Error('then') }}", kind: sandbox.KindThrown},
		{name: "thrown value whose toString throws", code: "return {get x() { throw {toString() { throw 1 }} }}", kind: sandbox.KindThrown},
		{name: "console.log of a throwing toString", code: "console.log({toString() { throw new Error('ts') }, toJSON() { throw new Error('tj') }}); return 1", kind: sandbox.KindThrown},
		// Markup is not escaped as HTML: it costs its bytes.
		{name: "markup", code: "return '<a href=\"x\">&amp;</a>'", want: `"<a href=\"x\">&amp;</a>"`},
		{name: "output of < up to the cap", code: "return '<'.repeat((4 << 20) - 2)", want: `"` + strings.Repeat("<", 4<<20-2) + `"`},
		{name: "caught log limit", code: "for (;;) try { console.log('x'.repeat(1000)) } catch (e) {}", kind: sandbox.KindLogs},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := p.Eval(context.Background(), request(tc.code))
			if tc.kind != "" {
				var se *sandbox.Error
				if !errors.As(err, &se) || se.Kind != tc.kind {
					t.Fatalf("err = %v (%T), want kind %s", err, err, tc.kind)
				}
				if !strings.Contains(se.Message, tc.msg) || tc.line != 0 && se.Line != tc.line {
					t.Errorf("error = %+v, want message with %q at line %d", se, tc.msg, tc.line)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(rep.Output) != tc.want {
				t.Errorf("output = %s, want %s", rep.Output, tc.want)
			}
			if strings.Join(rep.Logs, "\n") != strings.Join(tc.logs, "\n") {
				t.Errorf("logs = %q, want %q", rep.Logs, tc.logs)
			}
		})
	}
	if n := p.Started(); n != 1 {
		t.Errorf("workers started = %d, want 1: an evaluation that fails in-band keeps its worker", n)
	}
}

// TestHostile runs the corpus of issue 22 against real workers: each case
// ends within its timeout and 0.2 s with a clear error, no worker outlives
// its evaluation, the runner's own memory stays flat, and the next
// evaluation works.
func TestHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker per case")
	}
	const timeout = 500 * time.Millisecond
	// The bound; the race detector slows starting and reaping a
	// worker (measured within 25 ms of the timeout all the same).
	slack := 200 * time.Millisecond
	if raceEnabled {
		slack = 400 * time.Millisecond
	}
	cases := []struct {
		name, code string
		kinds      []sandbox.Kind // what may end it; none means the timeout
	}{
		{name: "loop", code: "while (true) {}"},
		// A lookahead keeps goja from Go's linear regexp: regexp2 backtracks.
		{name: "backtracking regex", code: "return /^(a+)+(?=$)/.test('a'.repeat(40) + 'b')"},
		{name: "indexOf over 2**32-1", code: "return new Array(2**32-1).indexOf(1)", kinds: []sandbox.Kind{sandbox.KindMemory}},
		{name: "join 2**24", code: "return new Array(2**24).join('ab').length", kinds: []sandbox.Kind{sandbox.KindMemory}},
		{name: "repeat 2**31", code: "return 'x'.repeat(2**31).length", kinds: []sandbox.Kind{sandbox.KindMemory, sandbox.KindThrown}},
		{name: "1 MiB strings forever", code: "const a = []; for (let i = 0; ; i++) a.push('x'.repeat(1 << 20) + i)", kinds: []sandbox.Kind{sandbox.KindMemory}},
		{name: "fill 2**28", code: "return new Array(2**28).fill(1.5).length", kinds: []sandbox.Kind{sandbox.KindMemory}},
		{name: "nested JSON.parse", code: "return JSON.parse('['.repeat(5e6))", kinds: []sandbox.Kind{sandbox.KindStack, sandbox.KindMemory, sandbox.KindThrown}},
		{name: "unbounded recursion", code: "const f = n => f(n + 1) + 1; return f(0)", kinds: []sandbox.Kind{sandbox.KindStack}},
		{name: "recursion through a built-in", code: "const f = () => [0].map(f); return f()", kinds: []sandbox.Kind{sandbox.KindStack, sandbox.KindMemory}},
		{name: "huge return value", code: "return Array.from({length: 1 << 16}, () => 'y'.repeat(100))", kinds: []sandbox.Kind{sandbox.KindOutput}},
		{name: "huge console.log", code: "console.log('z'.repeat(1 << 24))", kinds: []sandbox.Kind{sandbox.KindLogs}},
		{name: "object keys forever", code: "const o = {}; for (let i = 0; ; i++) o['k' + i] = i", kinds: []sandbox.Kind{sandbox.KindMemory}},
		{name: "promise loop", code: "const f = () => Promise.resolve().then(f); f(); return 1", kinds: []sandbox.Kind{sandbox.KindMemory}},
	}
	p := testPool(t, 1)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			req := request(tc.code)
			req.MaxOutputBytes = 1 << 20
			start := time.Now()
			_, err := p.Eval(ctx, req)
			took := time.Since(start)
			if took > timeout+slack {
				t.Errorf("took %v, over the timeout %v + %v", took, timeout, slack)
			}
			var se *sandbox.Error
			switch {
			case len(tc.kinds) == 0:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v, want the deadline", err)
				}
			case errors.As(err, &se):
				ok := false
				for _, k := range tc.kinds {
					ok = ok || se.Kind == k
				}
				if !ok {
					t.Errorf("err = %+v, want one of %v", se, tc.kinds)
				}
				if se.Message == "" {
					t.Error("no message")
				}
			case errors.Is(err, context.DeadlineExceeded):
				// Slower than its limit on this machine: the timeout
				// ended it, which is as bounded.
				t.Logf("ended by the timeout after %v", took)
			default:
				t.Errorf("err = %v (%T), want one of %v", err, err, tc.kinds)
			}
			if n := workerProcesses(t); n > 1 {
				t.Errorf("%d worker processes alive after the evaluation, want at most the idle one", n)
			}
			rep, err := p.Eval(context.Background(), request("return input.n + 1"))
			if err != nil || string(rep.Output) != "4" {
				t.Fatalf("next evaluation: %v, %v", rep, err)
			}
		})
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 8<<20 {
		t.Errorf("the parent's heap grew by %d bytes over the corpus", grew)
	}
	if after.Sys-before.Sys > 64<<20 {
		t.Errorf("the parent's memory from the OS grew by %d bytes over the corpus", after.Sys-before.Sys)
	}
}

// workerProcesses counts this process's children that are workers.
func workerProcesses(t *testing.T) int {
	out, err := exec.Command("ps", "-o", "pid=,stat=", "--ppid", strconv.Itoa(os.Getpid())).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(out) == 0 {
			return 0 // ps exits 1 when no process matched
		}
		t.Fatalf("ps: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] != strconv.Itoa(os.Getpid()) {
			pid, _ := strconv.Atoi(f[0])
			if syscall.Kill(pid, 0) == nil {
				n++
			}
		}
	}
	return n
}

// TestMemoryExhaustionIsMemory: code that runs its worker out of memory is
// reported as the memory limit every time, not as a crash, on this test
// binary as the worker and on the shipped worker (RUNNER_TEST_CODE_WORKER,
// which make test builds as the Makefile ships it). Built with Go 1.26's
// default collector, about one in four of these faulted in the runtime;
// the shipped worker, built without it, must report the runtime's own
// "out of memory", never the fault.
func TestMemoryExhaustionIsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker per evaluation")
	}
	codes := []string{
		"return 'x'.repeat(50 << 20)",
		"const s = 'x'.repeat(40 << 20); return [s, s + 'y']",
		"const a = []; for (let i = 0; i < 80 * 16; i++) a.push('y'.repeat(65536) + i); return a.length",
		"const o = {}; for (let i = 0; i < 40 * 20000; i++) o['k' + i] = {v: i}; return 1",
	}
	workers := map[string]string{"test binary": testBinary()}
	if p := os.Getenv("RUNNER_TEST_CODE_WORKER"); p != "" {
		workers["shipped worker"] = p
	}
	for name, path := range workers {
		t.Run(name, func(t *testing.T) {
			p := poolOf(t, path, 1)
			n := 16
			if raceEnabled && path == testBinary() {
				n = len(codes) // each about 4 s in a worker built with the race detector
			}
			for i := range n {
				code := codes[i%len(codes)]
				_, err := p.Eval(context.Background(), request(code))
				var se *sandbox.Error
				if !errors.As(err, &se) || se.Kind != sandbox.KindMemory {
					t.Fatalf("%s: err = %v, want the memory limit", code, err)
				}
				if name == "shipped worker" && strings.Contains(se.Message, "faulted") {
					t.Fatalf("%s: %s: the shipped worker faulted in its runtime (built with greenteagc?)", code, se.Message)
				}
			}
		})
	}
}
