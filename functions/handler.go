// Package functions serves Runner protocol v1 over HTTP: one http.Handler
// for GET /v1/capabilities and POST /v1/executions, used alike by the local
// server, the Lambda function URL (streaming) and API Gateway (buffered).
package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/infra/tokens"
	"github.com/runnerd/lambda-runner/protocol"
)

// DefaultMaxRequestBytes is Lambda's own request payload limit.
const DefaultMaxRequestBytes = 6 << 20

// DefaultBodyReadTimeout is long enough for a 6 MB body on a slow link and
// short enough that trickling clients cannot pile up.
const DefaultBodyReadTimeout = 10 * time.Second

// DefaultMaxStreamBytes bounds a streamed event stream (a local server, a
// function URL in RESPONSE_STREAM mode). It keeps within the 20 MB that
// Lambda long allowed a streamed response (now 200 MB), past which every
// byte is also sent at a capped 2 MB/s.
const DefaultMaxStreamBytes = 20 << 20

// DefaultMaxBufferedStreamBytes bounds an event stream that a proxy
// buffers (API Gateway, ALB, a BUFFERED function URL): their 6 MB response
// limit less room for the response's envelope. It is counted as the body's
// size once JSON-escaped inside that envelope.
const DefaultMaxBufferedStreamBytes = 6<<20 - 64<<10

// TokenSource checks bearer tokens. Verify returns nil for an accepted
// token, an error wrapping tokens.ErrUnknown for any other, and an error
// wrapping tokens.ErrUnavailable when it cannot tell (then the request is
// refused with 503: fail closed).
type TokenSource interface {
	Verify(ctx context.Context, token string) error
}

// Handler serves the protocol's two routes.
type Handler struct {
	// Tokens checks every request's bearer token. Required.
	Tokens TokenSource
	// Engine prepares and runs executions. Required.
	Engine *engine.Engine
	// Capabilities is served on GET /v1/capabilities.
	Capabilities protocol.Capabilities
	// MaxRequestBytes bounds request bodies (DefaultMaxRequestBytes if 0).
	MaxRequestBytes int64
	// BodyReadTimeout bounds reading a request body off a connection
	// (DefaultBodyReadTimeout if 0), so a client trickling its body cannot
	// hold a connection and a goroutine. Lambda events arrive whole and are
	// not affected.
	BodyReadTimeout time.Duration
	// MaxStreamBytes bounds a streamed response's event stream
	// (DefaultMaxStreamBytes if 0); MaxBufferedStreamBytes one that a proxy
	// buffers (DefaultMaxBufferedStreamBytes if 0), see BufferedResponse.
	// Past it the execution is cancelled and ends with an EXECUTION_FAILED
	// error naming LIMIT_EXCEEDED.
	MaxStreamBytes         int64
	MaxBufferedStreamBytes int64
	// Logger receives one line per request and per execution: ids, status
	// and figures, never bodies, tokens or secrets.
	Logger *slog.Logger
	// OnExecution, if set, is told how each accepted execution ended (for
	// metrics).
	OnExecution func(ctx context.Context, s protocol.Summary)
	// OnResponse, if set, is told the status of every response the handler
	// refuses with (4xx and 5xx before acceptance), for metrics.
	OnResponse func(ctx context.Context, status int)
	// MaxExecutions bounds the executions run at once (0: no bound); the
	// next is refused with 503 UNAVAILABLE and Retry-After, after its
	// token is checked and before its body is read. See
	// DefaultMaxExecutions, Drain and PathHealth (admission.go).
	MaxExecutions int

	admission admission
}

// RequestLimit is the largest request body served: MaxRequestBytes, or
// DefaultMaxRequestBytes when that is 0. Capabilities advertise it.
func (h *Handler) RequestLimit() int64 {
	if h.MaxRequestBytes <= 0 {
		return DefaultMaxRequestBytes
	}
	return h.MaxRequestBytes
}

// StreamLimits returns the bounds of an event stream: streamed and
// buffered. Capabilities advertise them.
func (h *Handler) StreamLimits() (streamed, buffered int64) {
	streamed, buffered = h.MaxStreamBytes, h.MaxBufferedStreamBytes
	if streamed <= 0 {
		streamed = DefaultMaxStreamBytes
	}
	if buffered <= 0 {
		buffered = DefaultMaxBufferedStreamBytes
	}
	return streamed, buffered
}

type bufferedKey struct{}

// BufferedResponse marks ctx as a request whose response a proxy buffers
// whole (API Gateway, ALB): its stream is bounded by
// MaxBufferedStreamBytes, counted as the proxy's JSON envelope carries it.
func BufferedResponse(ctx context.Context) context.Context {
	return context.WithValue(ctx, bufferedKey{}, true)
}

// ServeHTTP authenticates, routes and serves one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	log := h.logger().With("requestId", requestID(r))
	sw := &statusWriter{ResponseWriter: w}
	w = sw
	if h.OnResponse != nil {
		defer func() {
			if sw.status >= 400 {
				h.OnResponse(r.Context(), sw.status)
			}
		}()
	}
	// No panic escapes a request: before acceptance it is a 500, after it
	// the engine has already ended the stream (it recovers its own).
	defer answerPanic(r.Context(), sw, log)
	if r.URL.Path == PathHealth {
		h.serveHealth(w, r)
		return
	}
	if err := h.authenticate(r); err != nil {
		refuseBody(w, r)
		if errors.Is(err, tokens.ErrUnavailable) {
			log.Error("token source unavailable", "err", err)
			writeUnavailable(w, 5, "cannot verify credentials right now; try again")
			return
		}
		log.Info("unauthorized", "path", r.URL.Path, "reason", err.Error())
		w.Header().Set("WWW-Authenticate", `Bearer realm="runner"`)
		writeError(w, protocol.CodeUnauthorized, "missing or invalid bearer token")
		return
	}
	switch routePath(r.URL.Path) {
	case protocol.PathCapabilities:
		refuseBody(w, r)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		w.Header().Set("Content-Type", protocol.ContentTypeJSON)
		_ = json.NewEncoder(w).Encode(h.Capabilities)
	case protocol.PathExecutions:
		if r.Method != http.MethodPost {
			refuseBody(w, r)
			methodNotAllowed(w, "POST")
			return
		}
		r, done := h.admit(w, r)
		if r == nil {
			log.Info("execution refused", "running", h.Running(), "maxExecutions", h.MaxExecutions)
			return
		}
		defer done()
		h.execute(w, r, log, arrived)
	default:
		refuseBody(w, r)
		writeError(w, protocol.CodeNotFound, fmt.Sprintf("no route %s; this runner serves %s and %s", r.URL.Path, protocol.PathCapabilities, protocol.PathExecutions))
	}
}

// routePath collapses leading slashes: a base URL kept with its trailing
// slash (a function URL ends with "/") joined with "/v1/..." asks for
// "//v1/...", which still means that route.
func routePath(p string) string {
	if strings.HasPrefix(p, "//") {
		return "/" + strings.TrimLeft(p, "/")
	}
	return p
}

// authenticate checks the bearer token before anything else is read.
func (h *Handler) authenticate(r *http.Request) error {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return fmt.Errorf("%w: no bearer credentials", tokens.ErrUnknown)
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return fmt.Errorf("%w: malformed bearer credentials", tokens.ErrUnknown)
	}
	if h.Tokens == nil {
		return fmt.Errorf("%w: no token source configured", tokens.ErrUnavailable)
	}
	return h.Tokens.Verify(r.Context(), token)
}

func (h *Handler) execute(w http.ResponseWriter, r *http.Request, log *slog.Logger, arrived time.Time) {
	rc := http.NewResponseController(w)
	body, ok := h.readBody(w, r, rc, log)
	if !ok {
		return
	}
	x, err := h.Engine.PrepareBody(body)
	if errors.Is(err, engine.ErrBusy) {
		// Not the request's fault: its checks could not be made in time.
		log.Info("busy before acceptance", "err", err.Error())
		w.Header().Set("Retry-After", "1")
		writeError(w, protocol.CodeUnavailable, err.Error())
		return
	}
	if err != nil {
		var inv *protocol.Invalid
		if !errors.As(err, &inv) {
			inv = protocol.Invalidf("", "%v", err)
		}
		log.Info("invalid execution", "problems", len(inv.Details), "paths", problemPaths(inv.Details))
		resp := inv.Response()
		writeJSON(w, protocol.HTTPStatus(resp.Error.Code), resp)
		return
	}
	h.stream(w, r, rc, x, log, arrived)
}

// readBody reads the request body within the size limit and the body read
// timeout. When it cannot, it answers (413, 408 or 400) and returns false.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, log *slog.Logger) ([]byte, bool) {
	limit := h.RequestLimit()
	timeout := h.BodyReadTimeout
	if timeout <= 0 {
		timeout = DefaultBodyReadTimeout
	}
	// Not supported behind the Lambda adapters, whose bodies are in memory.
	deadline := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), min(r.ContentLength, limit, maxBodyPrealloc))
	if err != nil {
		if deadline {
			// Past, so that net/http does not drain what is left of the
			// body (up to 256 KiB) before closing.
			_ = rc.SetReadDeadline(time.Now())
			w.Header().Set("Connection", "close")
		}
		var tooLarge *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &tooLarge):
			status, body := protocol.BodyTooLarge(limit)
			writeJSON(w, status, body)
		case errors.As(err, &ne) && ne.Timeout():
			log.Info("request body too slow", "timeoutMs", timeout.Milliseconds())
			status, body := protocol.BodyTooSlow(timeout)
			writeJSON(w, status, body)
		default:
			writeError(w, protocol.CodeInvalidExecution, "cannot read request body")
		}
		return nil, false
	}
	if deadline {
		// Cleared, or the server's background read (which watches for the
		// client going away) would take the deadline for a disconnect.
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, true
}

// maxBodyPrealloc bounds what a request's Content-Length makes readBody
// allocate before the bytes arrive: a claim costs nothing to make.
const maxBodyPrealloc = 1 << 20

// readAll is io.ReadAll into a buffer of size bytes to start with (the
// declared length, when there is one), instead of one grown from 512 bytes
// by copies: for a 100 kB body that was twice its size in garbage.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	// One byte more, so that the end is read without growing.
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // room to read on
		}
	}
}

// stream accepts the prepared execution x and runs it, streaming its
// events within the stream limits.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, x *engine.Execution, log *slog.Logger, arrived time.Time) {
	id := newExecutionID()
	log = log.With("executionId", id)
	hdr := w.Header()
	hdr.Set("Content-Type", protocol.ContentTypeNDJSON)
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	// The execution's context: the stream limit cancels it, so that
	// nothing more runs once no more events can be sent. It ends at the
	// execution's end, which Run's deadline is derived from too.
	end, reserve := x.Deadline(r.Context())
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	ctx, cancelEnd := context.WithDeadline(ctx, end)
	defer cancelEnd()
	// Every wait ends by the deadline: no Emit waits for a slow client
	// past the execution's deadline, and a client that has not read the
	// stream's end by the end of the reserve is given up. The local
	// server's connection stops the write then; where the transport
	// cannot (the Lambda adapters), Finish stops waiting for it.
	wctx, cancelW := context.WithDeadline(ctx, end.Add(-reserve))
	defer cancelW()
	bounded := rc.SetWriteDeadline(end) == nil
	streamed, buffered := h.StreamLimits()
	opts := protocol.StreamOptions{
		MaxEventBytes:  h.Engine.Limits.WithDefaults().MaxEventBytes,
		MaxStreamBytes: streamed,
		OnLimit:        func() { cancel(protocol.ErrStreamLimit) },
	}
	if b, _ := r.Context().Value(bufferedKey{}).(bool); b {
		opts.MaxStreamBytes, opts.Escaped = buffered, true
	}
	if !bounded {
		opts.Deadline = end
	}
	// Lines are coalesced: written at most every millisecond by the
	// Writer's own goroutine, accepted and the terminal event at once.
	ew := protocol.NewStreamWriter(wctx, w, id, func() error {
		err := rc.Flush()
		if errors.Is(err, http.ErrNotSupported) {
			return nil // buffered transports (API Gateway) flush at the end
		}
		return err
	}, opts)
	if err := ew.Emit(&protocol.Accepted{}); err != nil {
		log.Info("client gone before accepted was written")
		return
	}
	accepted := time.Since(arrived)
	sum := x.Run(ctx, ew)
	sum.Accepted = accepted
	if ew.Limited() {
		sum.Status, sum.Code = protocol.StatusFailed, protocol.CodeLimitExceeded
	}
	log.Info("execution finished", "status", sum.Status, "code", sum.Code, "durationMs", sum.Duration.Milliseconds(),
		"nodes", sum.Nodes, "inputTokens", sum.Usage.InputTokens, "outputTokens", sum.Usage.OutputTokens,
		"clientGone", ew.Err() != nil, "streamLimit", ew.Limited())
	if h.OnExecution != nil {
		h.OnExecution(r.Context(), sum)
	}
}

// maxLoggedPaths bounds the paths a 400 log line carries: a document can
// have thousands of problems, the log line stays small.
const maxLoggedPaths = 20

// problemPaths lists the paths of a 400's problems, never their messages
// (which may quote what the author sent).
func problemPaths(ds []protocol.Detail) []string {
	paths := make([]string, 0, min(len(ds), maxLoggedPaths))
	for i, d := range ds {
		if i == maxLoggedPaths {
			paths = append(paths, fmt.Sprintf("... %d more", len(ds)-i))
			break
		}
		p := d.Path
		if p == "" {
			p = "(request)"
		}
		paths = append(paths, p)
	}
	return paths
}

// Recovered returns h with no panic escaping a request: the panic is
// logged and, when no response has started, answered with a 500 INTERNAL
// error body; a response already started just ends. Handler recovers its
// own panics; this guards whatever wraps it (the Lambda adapters run a
// streamed response's handler on a goroutine of their own, where a panic
// would end the process).
func Recovered(h http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer answerPanic(r.Context(), sw, logger)
		h.ServeHTTP(sw, r)
	})
}

// answerPanic, deferred, recovers a panic: it logs it and answers with a
// 500 INTERNAL error where no response has started.
func answerPanic(ctx context.Context, w *statusWriter, log *slog.Logger) {
	p := recover()
	if p == nil {
		return
	}
	log.ErrorContext(ctx, "panic serving request", "panic", fmt.Sprint(p))
	if w.status == 0 {
		writeError(w, protocol.CodeInternal, "internal error")
	}
}

// statusWriter notes the response status (0 until the response starts),
// for OnResponse and for answerPanic.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the transport's writer (flush).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (h *Handler) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// newExecutionID returns a UUIDv7: unique, and sortable by start time in
// the operator's logs.
func newExecutionID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// requestID is the Lambda request id when there is one, else a fresh id.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Amzn-Request-Id"); id != "" && len(id) <= maxRequestIDLen {
		return id
	}
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= maxRequestIDLen {
		return id
	}
	return fmt.Sprintf("local-%d", time.Now().UnixNano())
}

// maxRequestIDLen bounds a request id taken from a header: it goes into
// every log line of the request.
const maxRequestIDLen = 128

// refuseBody prepares a refusal of a request whose body will not be read:
// the connection is closed after the reply instead of first draining the
// body (net/http would read up to 256 KiB of a chunked one before
// answering, and a trickling client would hold the connection meanwhile).
// Behind the Lambda adapters there is no connection and nothing to do.
func refuseBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return
	}
	// A past deadline also stops any drain at once.
	if http.NewResponseController(w).SetReadDeadline(time.Now()) == nil {
		w.Header().Set("Connection", "close")
	}
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, protocol.CodeMethodNotAllowed, "method not allowed; use "+allow)
}

// writeError answers with an error body; protocol.HTTPStatus chooses the
// status from the code.
func writeError(w http.ResponseWriter, code protocol.Code, msg string) {
	writeJSON(w, protocol.HTTPStatus(code), protocol.NewErrorResponse(code, msg))
}

func writeJSON(w http.ResponseWriter, status int, body protocol.ErrorResponse) {
	w.Header().Set("Content-Type", protocol.ContentTypeJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
