// Package worker is the sandbox worker: the codeworker command
// (functions/codeworker), started by engine/sandbox's Pool with
// sandbox.WorkerArg, evaluates code nodes' JavaScript with goja, one
// request at a time, read from stdin and answered on stdout (engine/sandbox's
// frames), and checks their syntax before acceptance (a request with
// Check set, engine/sandbox/syntax). It links the JavaScript engine; only that command (and tests
// whose binary serves as the worker) import it, never the runner's
// bootstrap.
//
// Before goja allocates anything the worker caps its own memory with the
// kernel (RLIMIT_DATA: the writable mappings it may add beyond those it
// starts with), tells the Go runtime the same bound (GC before the kernel
// refuses) and caps its goroutine stack. Going past any of them is a fatal
// error that ends the process, which the parent reports. Everything else
// that never ends (a loop, a regex that backtracks, a built-in that runs
// for minutes) ends when the parent kills the process.
package worker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/sandbox/syntax"
)

// check answers a check request (sandbox.Pool.Check): the body's first
// syntax error, or nil. A panic of the parser is reported, not fatal.
func check(code string) (e *sandbox.Error) {
	defer func() {
		if p := recover(); p != nil {
			e = &sandbox.Error{Kind: sandbox.KindCrashed, Message: clip(fmt.Sprintf("internal error in the JavaScript parser: %v", p))}
		}
	}()
	if e = syntax.Check(code); e != nil {
		e.Message = clip(e.Message)
	}
	return e
}

// MaxCallStack bounds the JavaScript call stack (goja counts frames):
// unbounded recursion is a clear limit error rather than a heap that
// grows to the memory limit.
const MaxCallStack = 10_000

// maxGoStack bounds the worker's goroutine stack: goja's built-ins recurse
// in Go (JSON.parse of nested arrays), and Go's own limit is 1 GB.
const maxGoStack = 16 << 20

// Requested reports whether args (os.Args) start this process as a worker.
func Requested(args []string) bool { return len(args) > 1 && args[1] == sandbox.WorkerArg }

// Main runs the worker on stdin and stdout and exits; args are os.Args.
// Call it first thing in main (and in TestMain where the test binary is
// the worker), before the process does anything else.
func Main(args []string) {
	mem := sandbox.DefaultMemoryBytes
	if len(args) > 2 {
		if n, err := strconv.ParseInt(args[2], 10, 64); err == nil && n > 0 {
			mem = n
		}
	}
	if err := limit(mem); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox worker:", err)
		os.Exit(2)
	}
	os.Exit(serve(os.Stdin, os.Stdout, mem))
}

// limit applies the memory and stack bounds to this process.
func limit(mem int64) error {
	runtime.GOMAXPROCS(1)
	debug.SetMaxStack(maxGoStack)
	// The Go runtime's own accounting first, so that it collects hard
	// before the kernel refuses a mapping.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	debug.SetMemoryLimit(int64(ms.Sys) + mem)
	base, err := dataBytes()
	if err != nil {
		return err
	}
	lim := uint64(base + mem)
	return syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: lim, Max: lim})
}

// dataBytes is what RLIMIT_DATA counts of this process now: VmData of
// /proc/self/status.
func dataBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmData:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmData: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmData in /proc/self/status")
}

// serve answers requests until stdin ends, and returns the exit code.
func serve(in io.Reader, out io.Writer, mem int64) int {
	r := bufio.NewReader(in)
	for {
		var req sandbox.Request
		if err := sandbox.ReadFrame(r, 4*mem, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "sandbox worker: reading a request:", err)
			return 2
		}
		var rep sandbox.Reply
		if req.Check {
			rep.Error = check(req.Code)
		} else {
			rep = Eval(req)
		}
		if err := sandbox.WriteFrame(out, rep); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox worker: writing a reply:", err)
			return 2
		}
	}
}
