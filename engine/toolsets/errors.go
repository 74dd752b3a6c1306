package toolsets

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// Sentinels that an [*Error] may unwrap to.
var (
	// ErrUnknownToolset: the execution defines no toolset of that name.
	ErrUnknownToolset = errors.New("unknown toolset")
	// ErrClosed: the Set was closed.
	ErrClosed = errors.New("toolsets closed")
	// ErrUnavailable: the toolset used up its sessions (see the package
	// documentation) and is not dialled again in this execution.
	ErrUnavailable = errors.New("toolset unavailable")
	// ErrTimeout: the toolset's timeoutMs (or Options.DefaultTimeout) ran
	// out, while the caller's context was still live.
	ErrTimeout = errors.New("timed out")
	// ErrTooManyPages: the server's tool list had more pages than
	// Options.MaxListPages.
	ErrTooManyPages = errors.New("too many tools/list pages")
	// ErrTooManyTools: the server's tool list had more than MaxTools
	// tools, all its pages together.
	ErrTooManyTools = errors.New("too many tools")
)

// Error is every failure of a toolset: connect, protocol, server gone,
// timeout, cancellation. Tool is empty when no tool was involved (listing).
// Message is scrubbed of the toolset's header values and URL query values.
type Error struct {
	Toolset string
	Tool    string
	Message string

	cause error // a sentinel, a context error, a scrubbed *jsonrpc.Error, or nil
}

func (e *Error) Error() string {
	if e.Tool == "" {
		return fmt.Sprintf("toolset %q: %s", e.Toolset, e.Message)
	}
	return fmt.Sprintf("toolset %q: tool %q: %s", e.Toolset, e.Tool, e.Message)
}

// Unwrap returns what the failure can be checked against with errors.Is and
// errors.As: [ErrUnknownToolset], [ErrClosed], [ErrUnavailable],
// [ErrTimeout], context.Canceled or context.DeadlineExceeded (the caller's
// context ended), or a *jsonrpc.Error (the server answered with a JSON-RPC
// error; its Message is scrubbed too). It is nil for other failures, whose
// raw causes are kept out of reach because they may hold secrets.
func (e *Error) Unwrap() error { return e.cause }

// maxMessageLen bounds an Error's message: server messages can be long.
const maxMessageLen = 1000

// minQuerySecretLen is the length from which a URL query value is taken
// for a secret.
const minQuerySecretLen = 6

// scrubber removes a toolset's secrets from messages.
type scrubber struct {
	r *redact.Redactor
}

// newScrubber collects the secrets of a toolset: its header values (the
// redactor adds the credential part of "Bearer …" values, which a server
// may echo without the scheme, and the escaped forms a server or net/http
// may print) and its URL's query.
func newScrubber(headers map[string]string, rawURL string) scrubber {
	var raw []string
	for _, v := range headers {
		v = strings.TrimSpace(v)
		raw = append(raw, v)
		if _, cred, ok := strings.Cut(v, " "); ok {
			// Any scheme, not just the ones the redactor knows: a custom
			// "ApiKey abc" header is as secret.
			raw = append(raw, strings.TrimSpace(cred))
		}
	}
	if u, err := url.Parse(rawURL); err == nil {
		if u.RawQuery != "" {
			raw = append(raw, u.RawQuery)
		}
		// Query values are not declared secrets, but keys often travel
		// there. Short ones ("v=2") are left alone, as they would mangle
		// every message and cannot be keys.
		for _, vs := range u.Query() {
			for _, v := range vs {
				if len(v) >= minQuerySecretLen {
					raw = append(raw, v)
				}
			}
		}
	}
	return scrubber{redact.New(raw...)}
}

// scrub returns msg without any secret, trimmed and bounded.
func (s scrubber) scrub(msg string) string { return s.r.Message(msg, maxMessageLen) }

// fail turns err, from an operation on tool (empty for listing) run under
// opCtx, a child of the caller's ctx bounded by timeout, into an *Error.
func (t *toolset) fail(ctx, opCtx context.Context, tool string, err error) *Error {
	e := &Error{Toolset: t.def.Name, Tool: tool}
	var te *Error
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &te):
		// Already ours (unavailable, closed): keep its cause.
		e.Message, e.cause = te.Message, te.cause
	case ctx.Err() != nil:
		// The caller gave up; say so whatever the SDK made of it.
		e.cause = ctx.Err()
		e.Message = ctx.Err().Error()
	case t.set.ctx.Err() != nil:
		// Close cut the call short; the SDK calls that "connection closed".
		e.Message, e.cause = ErrClosed.Error(), ErrClosed
	case opCtx.Err() != nil:
		e.cause = ErrTimeout
		e.Message = fmt.Sprintf("timed out after %v", t.timeout.Round(time.Millisecond))
	case errors.As(err, &je):
		e.cause = &jsonrpc.Error{Code: je.Code, Message: t.scrub.scrub(je.Message)}
		e.Message = t.scrub.scrub(err.Error())
	default:
		e.Message = t.scrub.scrub(err.Error())
	}
	return e
}
