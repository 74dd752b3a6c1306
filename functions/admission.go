package functions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/protocol"
)

// PathHealth is the readiness route: answered without a token, 200 "ok"
// while the handler admits executions and 503 "draining" once Drain has
// begun. It says nothing else (no version, no configuration), so that a
// load balancer or an orchestrator's probe can call it anonymously.
const PathHealth = "/healthz"

// Seconds of Retry-After on a 503 refusing an execution: at capacity, a
// slot frees when any execution ends; draining, the client should go to
// another runner, or come back once this one has restarted.
const (
	retryBusy     = 1
	retryDraining = 5
)

// DefaultMaxExecutions is how many executions a process of l.MemoryMB
// runs at once when each may hold l.MemoryBudget (defaults applied): what
// the Go memory limit (nine tenths of the memory) leaves after an eighth
// of the memory for the runtime, the compiled plans and the requests being
// read, divided by one and a half budgets (an execution's outputs, and the
// garbage of building them that the collector has yet to reclaim); at
// least 1. With the default budget (a quarter of the memory) that is 2,
// whatever the memory. Measured: 3 executions each holding 52 MB of a
// 64 MB budget took a 256 MB runner to 249–262 MB resident, 2 to 235–247
// MB (TestServiceAdmissionBoundsMemory, functions/runner).
func DefaultMaxExecutions(l engine.Limits) int {
	l = l.WithDefaults()
	mem := int64(l.MemoryMB) << 20
	room := mem*9/10 - mem/8
	return max(1, int(room/max(l.MemoryBudget*3/2, 1)))
}

// admission counts the executions running and whether the handler is
// draining. Its zero value admits without bound.
type admission struct {
	mu       sync.Mutex
	running  int
	draining bool
	idle     chan struct{} // closed when running reaches 0 while draining
	// halt is cancelled, with ErrDraining, when Drain gives up waiting.
	halt    context.Context
	haltNow context.CancelCauseFunc
}

// admit takes a slot for one execution and returns r with a context that
// Drain can cancel; or it answers 503 UNAVAILABLE with Retry-After and
// returns nil: at MaxExecutions, or once draining. The caller calls
// release when the execution's stream has ended, and done.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request) (_ *http.Request, done func()) {
	a := &h.admission
	a.mu.Lock()
	draining, full := a.draining, h.MaxExecutions > 0 && a.running >= h.MaxExecutions
	if !draining && !full {
		a.running++
		if a.halt == nil {
			a.halt, a.haltNow = context.WithCancelCause(context.Background())
		}
	}
	halt := a.halt
	a.mu.Unlock()
	switch {
	case draining:
		refuseBody(w, r)
		writeUnavailable(w, retryDraining, "this runner is shutting down; send the execution to another runner or retry later")
		return nil, nil
	case full:
		refuseBody(w, r)
		writeUnavailable(w, retryBusy, "this runner is running as many executions as it can ("+
			strconv.Itoa(h.MaxExecutions)+", maxExecutions); retry later")
		return nil, nil
	}
	// The execution's context ends with the request's or, naming the
	// shutdown, with halt.
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(halt, func() { cancel(context.Cause(halt)) })
	return r.WithContext(ctx), func() {
		stop()
		cancel(nil)
		h.release()
	}
}

// release gives back the slot admit took.
func (h *Handler) release() {
	a := &h.admission
	a.mu.Lock()
	defer a.mu.Unlock()
	a.running--
	if a.running == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
}

// ErrDraining is the cause of the cancellation of an execution still
// running when Drain's bound passes.
var ErrDraining = errors.New("the runner is shutting down")

// Drain stops admitting executions (they get 503 UNAVAILABLE, and the
// readiness route 503) and waits until those running have ended. When ctx
// is done first, it cancels them with ErrDraining (each ends with its
// terminal event, within the engine's reserve) and waits for them again,
// at most until stop is done. It returns nil when every execution ended
// by itself, else an error saying how many were cancelled or are left.
func (h *Handler) Drain(ctx, stop context.Context) error {
	a := &h.admission
	a.mu.Lock()
	a.draining = true
	if a.running > 0 && a.idle == nil {
		a.idle = make(chan struct{})
	}
	idle := a.idle
	a.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	cancelled := a.running
	if cancelled > 0 {
		a.haltNow(ErrDraining) // set by admit
	}
	a.mu.Unlock()
	select {
	case <-idle:
		return fmt.Errorf("%d executions still running when the drain ended were cancelled", cancelled)
	case <-stop.Done():
		return fmt.Errorf("%d executions cancelled at the end of the drain, %d of them still running", cancelled, h.Running())
	}
}

// Running reports how many executions are admitted and not yet ended.
func (h *Handler) Running() int {
	a := &h.admission
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running
}

// serveHealth answers the readiness route.
func (h *Handler) serveHealth(w http.ResponseWriter, r *http.Request) {
	refuseBody(w, r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	a := &h.admission
	a.mu.Lock()
	draining := a.draining
	a.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if draining {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("draining\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// writeUnavailable refuses a request before acceptance with 503, a
// Retry-After of retryAfter seconds and an UNAVAILABLE error body saying
// msg: the one way the handler says "not now, try again".
func writeUnavailable(w http.ResponseWriter, retryAfter int, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	writeError(w, protocol.CodeUnavailable, msg)
}
