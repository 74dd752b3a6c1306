package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A Pool without a path starts WorkerName beside this executable.
func TestDefaultWorker(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DefaultWorker()
	if want := filepath.Join(filepath.Dir(exe), WorkerName); err != nil || got != want {
		t.Errorf("DefaultWorker() = %q, %v; want %q", got, err, want)
	}
}

func TestCheckWorker(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{exe, ""},
		{filepath.Join(dir, "none"), filepath.Join(dir, "none")},
		{dir, "not a regular file"},
		{plain, "not executable"},
	}
	for _, tt := range tests {
		err := CheckWorker(tt.path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckWorker(%q) = %v, want nil", tt.path, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckWorker(%q) = %v, want an error naming %q", tt.path, err, tt.want)
		}
	}
}

// A worker that cannot be started fails the evaluation at once, naming
// the path: it never waits for a reply that cannot come.
func TestEvalMissingWorker(t *testing.T) {
	path := filepath.Join(t.TempDir(), WorkerName)
	p := &Pool{Options: Options{Path: path}}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.Eval(ctx, Request{Code: "return 1", MaxOutputBytes: 1 << 10, MaxLogBytes: 1 << 10})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindCrashed || !strings.Contains(e.Message, path) {
		t.Fatalf("Eval = %v, want a %s error naming %s", err, KindCrashed, path)
	}
	if ctx.Err() != nil {
		t.Fatal("Eval waited for the context")
	}
}

// A check needs a worker: one that cannot start is a clear error naming
// the path, at once; nesting over MaxNesting is refused without one.
func TestCheckMissingWorker(t *testing.T) {
	path := filepath.Join(t.TempDir(), WorkerName)
	p := &Pool{Options: Options{Path: path}}
	defer p.Close()
	var e *Error
	if err := p.Check(context.Background(), "return 1"); !errors.As(err, &e) || e.Kind != KindCrashed || !strings.Contains(e.Message, "could not start") || !strings.Contains(e.Message, path) {
		t.Fatalf("Check = %v, want a %s error naming %s", err, KindCrashed, path)
	}
	started := p.Started()
	err := p.Check(context.Background(), strings.Repeat("[", MaxNesting+1))
	if !errors.As(err, &e) || e.Kind != KindThrown || !strings.Contains(e.Message, "nest deeper") || e.Line != 1 || e.Column != MaxNesting+1 {
		t.Errorf("Check of deep nesting = %+v", err)
	}
	if p.Started() != started {
		t.Error("deep nesting was sent to a worker")
	}
}

// silentWorker writes a worker that starts and never answers.
func silentWorker(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "silent")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// A worker that does not answer a check is killed at CheckTimeout: the
// check says so rather than holding Prepare.
func TestCheckTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits CheckTimeout")
	}
	path := silentWorker(t)
	p := &Pool{Options: Options{Path: path}}
	defer p.Close()
	start := time.Now()
	err := p.Check(context.Background(), "return 1")
	took := time.Since(start)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindCrashed || !strings.Contains(e.Message, "did not end within") {
		t.Errorf("Check = %v, want the check's timeout", err)
	}
	if took < CheckTimeout || took > CheckTimeout+5*time.Second {
		t.Errorf("Check took %v, want about %v", took, CheckTimeout)
	}
}

// A check never waits behind evaluations: with the only worker held by
// an evaluation that outlasts it, the check takes the slot reserved for
// checks (a worker of its own), and its caller's context bounds it,
// failing with ErrBusy rather than blaming the code. The evaluation keeps
// its worker.
func TestCheckNeverWaitsBehindEvaluations(t *testing.T) {
	path := silentWorker(t)
	p := &Pool{Options: Options{Path: path, Workers: 1}}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	evalDone := make(chan error, 1)
	go func() {
		_, err := p.Eval(ctx, Request{Code: "for (;;) {}", MaxOutputBytes: 1 << 10, MaxLogBytes: 1 << 10})
		evalDone <- err
	}()
	waitStarted(t, p, 1)
	cctx, ccancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer ccancel()
	err := p.Check(cctx, "return 1")
	if !errors.Is(err, ErrBusy) {
		t.Errorf("Check = %v, want ErrBusy", err)
	}
	if n := p.Started(); n != 2 {
		t.Errorf("%d workers started, want 2: the check waited behind the evaluation", n)
	}
	// A context already ended sends nothing to a worker.
	if err := p.Check(cctx, "return 2"); !errors.Is(err, ErrBusy) || p.Started() != 2 {
		t.Errorf("Check after the budget = %v, %d workers started", err, p.Started())
	}
	select {
	case err := <-evalDone:
		t.Fatalf("the evaluation ended with the check: %v", err)
	default:
	}
	cancel()
	if err := <-evalDone; !errors.Is(err, context.Canceled) {
		t.Errorf("Eval = %v, want the context's end", err)
	}
}

// One owner holds at most Share workers: its next evaluation waits (for as
// long as its context lasts, never starting a worker) while another
// owner's evaluation gets the worker left.
func TestShare(t *testing.T) {
	for _, tc := range []struct{ workers, share int }{{0, 1}, {1, 1}, {2, 1}, {3, 2}, {4, 2}, {16, 8}} {
		if got := (&Pool{Options: Options{Workers: tc.workers}}).Share(); got != tc.share {
			t.Errorf("Share of %d workers = %d, want %d", tc.workers, got, tc.share)
		}
	}
	path := silentWorker(t)
	p := &Pool{Options: Options{Path: path, Workers: 2}}
	defer p.Close()
	req := Request{Code: "for (;;) {}", MaxOutputBytes: 1 << 10, MaxLogBytes: 1 << 10}
	a, b := new(int), new(int)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() {
		_, err := p.EvalWith(ctx, req, EvalOptions{Owner: a})
		done <- err
	}()
	waitStarted(t, p, 1)
	wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer wcancel()
	started := false
	_, err := p.EvalWith(wctx, req, EvalOptions{Owner: a, Started: func(time.Duration) { started = true }})
	if !errors.Is(err, context.DeadlineExceeded) || started || p.Started() != 1 {
		t.Errorf("owner a's second evaluation = %v (started %v, %d workers): want it to wait for its share", err, started, p.Started())
	}
	go func() {
		_, err := p.EvalWith(ctx, req, EvalOptions{Owner: b})
		done <- err
	}()
	waitStarted(t, p, 2)
	cancel()
	for range 2 {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("EvalWith = %v, want the context's end", err)
		}
	}
	p.mu.Lock()
	left := len(p.shares)
	p.mu.Unlock()
	if left != 0 {
		t.Errorf("%d shares kept after their evaluations ended", left)
	}
}

// EvalOptions.Timeout counts from when a worker starts on the evaluation:
// one that waited for the only worker longer than its timeout still gets
// its whole timeout, is told how long it waited, and ends with KindTimeout.
func TestTimeoutCountsFromStart(t *testing.T) {
	path := silentWorker(t)
	p := &Pool{Options: Options{Path: path, Workers: 1}}
	defer p.Close()
	req := Request{Code: "for (;;) {}", MaxOutputBytes: 1 << 10, MaxLogBytes: 1 << 10}
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan error, 1)
	go func() {
		_, err := p.Eval(ctx, req)
		held <- err
	}()
	waitStarted(t, p, 1)
	const timeout = 100 * time.Millisecond
	var waited time.Duration
	done := make(chan error, 1)
	go func() {
		_, err := p.EvalWith(context.Background(), req, EvalOptions{Timeout: timeout, Started: func(d time.Duration) { waited = d }})
		done <- err
	}()
	time.Sleep(3 * timeout) // past the timeout, waiting
	cancel()
	<-held
	err := <-done
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindTimeout {
		t.Errorf("EvalWith = %v, want %s", err, KindTimeout)
	}
	if waited < 3*timeout {
		t.Errorf("waited %v, want the time the worker was held (%v at least)", waited, 3*timeout)
	}
}

// waitStarted waits until p has started n workers.
func waitStarted(t *testing.T, p *Pool, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); p.Started() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers started, want %d", p.Started(), n)
		}
	}
}

// TestDeathCause: how a worker's end is told from what it printed, among
// them the fault Go 1.26's default collector makes when the kernel refuses
// it memory at the worker's limit (its stderr, as captured).
func TestDeathCause(t *testing.T) {
	const greenteaFault = "SIGSEGV: segmentation violation\nPC=0x436bbd m=0 sigcode=1 addr=0x0\n\n" +
		"goroutine 0 gp=0xda51e0 m=0 mp=0xda5fa0 [idle]:\nruntime.(*spanQueue).tryDrain(0x7ffe00000400?, 0x43f405?, 0xda55e8?)\n" +
		"\truntime/mgcmark_greenteagc.go:520 +0x5d fp=0x7ffe9e505140 sp=0x7ffe9e505120 pc=0x436bbd\n"
	for _, tc := range []struct {
		name, stderr string
		kind         Kind
	}{
		{"runtime out of memory", "fatal error: runtime: out of memory\n\nruntime stack:\n", KindMemory},
		{"refused mapping", "runtime: cannot allocate memory\nfatal error: out of memory\n", KindMemory},
		{"stack", "runtime: goroutine stack exceeds 16777216-byte limit\nfatal error: stack overflow\n", KindStack},
		{"fault in the collector at the limit", greenteaFault, KindMemory},
		{"fault in runtime code", "fatal error: unexpected signal during runtime execution\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4]\n", KindMemory},
		{"a Go panic is a crash", "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0]\n", KindCrashed},
		{"nothing said", "", KindCrashed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var se *Error
			if err := deathCause(tc.stderr, nil); !errors.As(err, &se) || se.Kind != tc.kind || se.Message == "" {
				t.Errorf("deathCause = %+v, want kind %s", err, tc.kind)
			}
		})
	}
}

// A reply is admitted by EvalOptions.Reserve as its frame's header
// announces it, before anything is read or allocated for it: a worker that
// announces 16 MiB and never sends them is refused at once with Reserve's
// error, and killed (the next evaluation starts another).
func TestReserveRefusesReplyUnread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "announcer")
	// The header of a 16 MiB frame, then nothing.
	if err := os.WriteFile(path, []byte("#!/bin/sh\nprintf '\\001\\000\\000\\000'\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Pool{Options: Options{Path: path, Workers: 1}}
	defer p.Close()
	errBudget := errors.New("over the budget")
	tests := []struct {
		name    string
		reserve func(int64) error
		want    error
	}{
		{"refused", func(n int64) error { return errBudget }, errBudget},
		{"admitted, then never sent", func(int64) error { return nil }, context.DeadlineExceeded},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var announced int64
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			_, err := p.EvalWith(ctx, Request{Code: "return 1", MaxOutputBytes: 32 << 20, MaxLogBytes: 1 << 10},
				EvalOptions{Reserve: func(n int64) error { announced = n; return tt.reserve(n) }})
			if !errors.Is(err, tt.want) {
				t.Fatalf("EvalWith = %v, want %v", err, tt.want)
			}
			if announced != 16<<20 {
				t.Errorf("Reserve was asked for %d bytes, want the announced %d", announced, 16<<20)
			}
			if tt.want == errBudget && time.Since(start) > time.Second {
				t.Errorf("the refusal took %v: the reply was waited for", time.Since(start))
			}
			if got := p.Started(); got != int64(i+1) {
				t.Errorf("%d workers started after %d evaluations: a refused reply's worker was kept", got, i+1)
			}
		})
	}
}
