package telemetry

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// RequestIDKey is the log attribute naming the Lambda request id, the key
// the HTTP handler uses too, so that a record has it at most once.
const RequestIDKey = "requestId"

// current is the request id of the invocation in flight, for records
// logged without the invocation's context (the engine logs with none). It
// is only set while a process serves one invocation at a time (Lambda's
// default; lambdacontext.MaxConcurrency), when "the invocation in flight" is
// well defined.
var current atomic.Pointer[string]

// BeginInvocation records requestID as the invocation in flight until the
// returned function is called. Under Lambda managed instances, which run
// several invocations in one process, it does nothing: there, only records
// logged with an invocation's context carry its id.
func BeginInvocation(requestID string) (end func()) {
	if requestID == "" || lambdacontext.MaxConcurrency() > 1 {
		return func() {}
	}
	p := &requestID
	current.Store(p)
	// CompareAndSwap: a later invocation's id is never wiped by an earlier
	// one's late end.
	return func() { current.CompareAndSwap(p, nil) }
}

// requestID is the Lambda request id for a record logged with ctx: the
// invocation's own (from ctx), else the one in flight.
func requestID(ctx context.Context) string {
	if ctx != nil {
		if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
			return lc.AwsRequestID
		}
	}
	if p := current.Load(); p != nil {
		return *p
	}
	return ""
}

// NewLogHandler wraps h so that every record logged during a Lambda
// invocation carries its request id as "requestId", unless the record or
// the logger already has one. Outside Lambda it adds nothing.
func NewLogHandler(h slog.Handler) slog.Handler {
	return &logHandler{inner: h}
}

type logHandler struct {
	inner slog.Handler
	// hasID: the logger's own attributes already name the request.
	hasID bool
	// grouped: a group is open, so an added attribute would land inside it
	// instead of at the top level where queries look for it.
	grouped bool
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.hasID && !h.grouped {
		if id := requestID(ctx); id != "" && !recordHas(r, RequestIDKey) {
			r = r.Clone()
			r.AddAttrs(slog.String(RequestIDKey, id))
		}
	}
	return h.inner.Handle(ctx, r)
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.inner = h.inner.WithAttrs(attrs)
	if !h.grouped {
		for _, a := range attrs {
			c.hasID = c.hasID || a.Key == RequestIDKey
		}
	}
	return &c
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.inner = h.inner.WithGroup(name)
	c.grouped = c.grouped || name != ""
	return &c
}

func recordHas(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}
