package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configures a Pool. The zero value is usable.
type Options struct {
	// MemoryBytes is each worker's memory limit for one evaluation (its
	// heap, stacks and the values it holds). 0 means DefaultMemoryBytes.
	MemoryBytes int64
	// Workers bounds the workers that evaluate at once; the other
	// evaluations wait for one to be free. One owner (an execution, see
	// EvalOptions.Owner) holds at most Share of them. One more worker,
	// reserved for syntax checks (Check), may be alive besides. 0 means 1.
	Workers int
	// Path is the executable started as a worker, with WorkerArg as its
	// first argument. "" means WorkerName beside this process's own
	// executable (DefaultWorker).
	Path string
}

// Pool runs evaluations in worker processes, started on first use and kept
// warm between evaluations. A worker that fails in a way that may have
// left it unsound (it was killed, it crashed, it reached a limit) is
// discarded and replaced on the next evaluation. The zero value is usable;
// Close stops the idle workers.
type Pool struct {
	Options Options

	once  sync.Once
	slots chan struct{} // one per evaluation or check running
	// checkSlot is the slot reserved for checks, so that a check never
	// waits behind evaluations (they may hold every slot for minutes).
	checkSlot chan struct{}
	mu        sync.Mutex
	idle      []*worker
	// shares holds the slots of each owner with an evaluation waiting or
	// running, at most Share each (EvalOptions.Owner).
	shares map[any]*share
	// started counts workers started, for tests and benchmarks.
	started int64
	// checked holds the bodies Check found valid, checkedSize their bytes.
	checked     map[string]struct{}
	checkedSize int
}

func (p *Pool) init() {
	p.once.Do(func() {
		n := p.Options.Workers
		if n <= 0 {
			n = 1
		}
		p.slots = make(chan struct{}, n)
		p.checkSlot = make(chan struct{}, 1)
	})
}

// Share is the most workers one owner's evaluations hold at once: half
// the workers, rounded up (one of one, one of two, two of three or four).
// One execution that keeps every worker it may have busy (code that
// spins until its timeout) leaves the rest to the others: with two
// workers or more, at least one.
func (p *Pool) Share() int {
	return (max(1, p.Options.Workers) + 1) / 2
}

// share is one owner's part of the pool.
type share struct {
	slots chan struct{}
	users int // evaluations waiting or running
}

// join returns owner's share, counting one more user of it.
func (p *Pool) join(owner any) *share {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.shares[owner]
	if s == nil {
		if p.shares == nil {
			p.shares = map[any]*share{}
		}
		s = &share{slots: make(chan struct{}, p.Share())}
		p.shares[owner] = s
	}
	s.users++
	return s
}

// leave counts one user fewer of owner's share, forgetting it at none.
func (p *Pool) leave(owner any, s *share) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.users--; s.users == 0 {
		delete(p.shares, owner)
	}
}

// MemoryBytes returns the memory limit of each evaluation, default applied.
func (p *Pool) MemoryBytes() int64 {
	if p.Options.MemoryBytes > 0 {
		return p.Options.MemoryBytes
	}
	return DefaultMemoryBytes
}

// Started returns how many workers the pool has started.
func (p *Pool) Started() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// Eval runs one evaluation in a worker of its own, as EvalWith does
// without options: no owner's share bounds it, and ctx alone its time.
func (p *Pool) Eval(ctx context.Context, req Request) (*Reply, error) {
	return p.EvalWith(ctx, req, EvalOptions{})
}

// EvalOptions say whose an evaluation is and how long it may run.
type EvalOptions struct {
	// Owner is the execution the evaluation is part of, any comparable
	// value (a pointer): the evaluations of one owner hold at most Share
	// workers at once, and wait their turn for more. Nil: no bound but
	// the pool's.
	Owner any
	// Timeout, above 0, bounds the evaluation from when a worker starts on
	// it, as a node's timeoutMs does; the wait for a worker is not part of
	// it, and is bounded by ctx alone (the execution's deadline). When it
	// passes the worker is killed and EvalWith fails with a *Error of
	// KindTimeout.
	Timeout time.Duration
	// Started, if set, is called once a worker starts on the evaluation,
	// with how long the evaluation waited for it.
	Started func(waited time.Duration)
	// Reserve, if set, is called with the length of the worker's reply
	// as its frame announces it, before the reply is read: the reply
	// takes about twice that while it is decoded (its bytes and the Reply
	// they become). An error refuses the reply unread: the worker is
	// killed, and EvalWith returns the error as it is.
	Reserve func(frame int64) error
}

// refusedReply carries the error of EvalOptions.Reserve out of a worker's
// evaluation, apart from the failures of the pipe.
type refusedReply struct{ err error }

func (r refusedReply) Error() string { return r.err.Error() }

// EvalWith runs one evaluation in a worker of its own, once the owner's
// share and the pool have a worker free for it: ctx bounds the wait and
// the evaluation, opts.Timeout the evaluation alone. When ctx ends first
// the worker is killed (its whole process group) and reaped before
// EvalWith returns ctx's error. A failure of the code is an *Error.
func (p *Pool) EvalWith(ctx context.Context, req Request, opts EvalOptions) (*Reply, error) {
	p.init()
	began := time.Now()
	if opts.Owner != nil {
		s := p.join(opts.Owner)
		defer p.leave(opts.Owner, s)
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-s.slots }()
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.slots }()
	if opts.Started != nil {
		opts.Started(time.Since(began))
	}
	rctx := ctx
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	rep, err := p.evalIn(rctx, req, opts.Reserve)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, &Error{Kind: KindTimeout, Message: fmt.Sprintf("the code ran past its timeout (%v)", opts.Timeout)}
	}
	return rep, err
}

// evalIn runs req in a worker, idle or started for it; the caller holds
// a slot. reserve is EvalOptions.Reserve.
func (p *Pool) evalIn(ctx context.Context, req Request, reserve func(int64) error) (*Reply, error) {
	w, err := p.take()
	if err != nil {
		return nil, &Error{Kind: KindCrashed, Message: "the sandbox worker could not start: " + err.Error()}
	}
	rep, keep, err := w.eval(ctx, req, reserve)
	if keep {
		p.mu.Lock()
		p.idle = append(p.idle, w)
		p.mu.Unlock()
	} else {
		w.kill()
	}
	return rep, err
}

// take returns an idle worker or starts one; the caller holds a slot.
func (p *Pool) take() (*worker, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return w, nil
	}
	p.started++
	p.mu.Unlock()
	return startWorker(p.Options.Path, p.MemoryBytes())
}

// WorkerName is the file name of the worker executable (the command
// functions/codeworker) that a Pool without Options.Path starts: it is
// shipped beside the runner's, as bootstrap and codeworker in the Lambda
// package. The runner itself links no JavaScript runtime.
const WorkerName = "codeworker"

// DefaultWorker returns the worker a Pool without Options.Path starts:
// WorkerName in the directory of this process's executable.
func DefaultWorker() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the sandbox worker beside this executable: %w", err)
	}
	return filepath.Join(filepath.Dir(exe), WorkerName), nil
}

// CheckWorker returns an error naming path when it is not an executable
// file, so that a runner whose worker is missing says so when it starts
// rather than at its first code node.
func CheckWorker(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("sandbox worker: %w", err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("sandbox worker %s: not a regular file", path)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("sandbox worker %s: not executable", path)
	}
	return nil
}

// Close stops the idle workers. Evaluations running meanwhile finish, and
// their workers are kept for later ones.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		w.kill()
	}
}

// worker is one sandbox process.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *headBuffer
}

// workerEnv is the whole environment of a worker: nothing of the runner's
// (its tokens and credentials stay out of reach even of a flaw in the
// engine), one processor, and no goroutine dump on a fatal error.
var workerEnv = []string{"GOMAXPROCS=1", "GOGC=100", "GOTRACEBACK=none"}

func startWorker(path string, memory int64) (*worker, error) {
	if path == "" {
		exe, err := DefaultWorker()
		if err != nil {
			return nil, err
		}
		path = exe
	}
	cmd := exec.Command(path, WorkerArg, strconv.FormatInt(memory, 10))
	cmd.Env = workerEnv
	cmd.SysProcAttr = procAttr()
	w := &worker{cmd: cmd, stderr: &headBuffer{max: 4 << 10}}
	cmd.Stderr = w.stderr
	var err error
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if w.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return w, nil
}

// eval sends one request and waits for the reply, the worker's end or
// ctx's. keep says whether the worker may serve another evaluation.
// reserve, if set, admits the reply's frame before it is read.
func (w *worker) eval(ctx context.Context, req Request, reserve func(int64) error) (rep *Reply, keep bool, err error) {
	type answer struct {
		rep Reply
		err error
	}
	done := make(chan answer, 1)
	// The reply may carry the output, the logs JSON-escaped, and the
	// frame's own fields.
	limit := req.MaxOutputBytes + 6*req.MaxLogBytes + 64<<10
	var admit func(int64) error
	if reserve != nil {
		admit = func(n int64) error {
			if err := reserve(n); err != nil {
				return refusedReply{err}
			}
			return nil
		}
	}
	go func() {
		var a answer
		if a.err = WriteFrame(w.stdin, req); a.err == nil {
			a.err = readFrame(w.stdout, limit, admit, &a.rep)
		}
		done <- a
	}()
	select {
	case <-ctx.Done():
		w.kill()
		<-done // the pipes close with the process
		return nil, false, ctx.Err()
	case a := <-done:
		var refused refusedReply
		switch {
		case errors.As(a.err, &refused):
			// The reply is unread in the pipe: the worker cannot serve
			// another evaluation.
			w.kill()
			return nil, false, refused.err
		case errors.Is(a.err, ErrFrameTooHeavy):
			// Within its bytes: the author needs to know why it is refused.
			return nil, true, &Error{Kind: KindOutput, Message: fmt.Sprintf("the return value and console output would take more than %d bytes once decoded: they hold many small values, each counted for what it takes in memory", limit)}
		case errors.Is(a.err, ErrFrameTooLarge):
			w.kill()
			return nil, false, &Error{Kind: KindOutput, Message: fmt.Sprintf("the return value and console output exceed %d bytes", limit)}
		case a.err != nil:
			return nil, false, w.died()
		case a.rep.Error != nil:
			return nil, true, a.rep.Error
		}
		return &a.rep, true, nil
	}
}

// died reaps a worker whose pipe closed in the middle of an evaluation and
// says why it ended (deathCause).
func (w *worker) died() error {
	w.stdin.Close()
	err := w.cmd.Wait()
	w.cmd = nil
	return deathCause(w.stderr.String(), err)
}

// deathCause says why a worker ended, from the head of what it printed
// and its exit.
func deathCause(stderr string, exit error) error {
	switch {
	// The Go runtime's words, and the race detector's (tests).
	case strings.Contains(stderr, "out of memory"), strings.Contains(stderr, "cannot allocate memory"), strings.Contains(stderr, "failed to allocate"):
		return &Error{Kind: KindMemory, Message: "the code exceeded its memory limit"}
	case strings.Contains(stderr, "stack overflow"), strings.Contains(stderr, "stack exceeds"):
		return &Error{Kind: KindStack, Message: "the code nested too deeply (stack overflow)"}
	case strings.HasPrefix(stderr, "SIGSEGV: segmentation violation"), strings.Contains(stderr, "unexpected signal during runtime execution"):
		// A fault in the Go runtime itself: in a worker that runs only
		// Go code, one of the runtime's own allocations that the kernel
		// refused at the worker's memory limit (RLIMIT_DATA) and that
		// the runtime did not check (Go 1.26's default GC left its span
		// queue's nil; the worker is built without it, see Makefile).
		return &Error{Kind: KindMemory, Message: "the code exceeded its memory limit (the worker's Go runtime faulted on a refused allocation)"}
	}
	var ee *exec.ExitError
	if errors.As(exit, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			// Not ours (kill is not followed by died): the kernel's
			// out-of-memory killer, as far as can be told.
			return &Error{Kind: KindMemory, Message: "the sandbox worker was killed, likely out of memory"}
		}
	}
	return &Error{Kind: KindCrashed, Message: "the sandbox worker ended unexpectedly"}
}

// kill ends the worker's process group at once and reaps it.
func (w *worker) kill() {
	if w.cmd == nil {
		return
	}
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	_ = w.cmd.Process.Kill()
	w.stdin.Close()
	_ = w.cmd.Wait()
	w.cmd = nil
}

// headBuffer keeps the first max bytes written to it and drops the rest.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.b)
}
