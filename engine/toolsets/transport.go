package toolsets

import (
	"context"
	"net/http"
	"net/url"

	"github.com/runnerd/lambda-runner/engine/egress"
)

// reads are the bounds on what a Set reads from its servers (see Options).
type reads struct {
	response, list int64
	pages          int
	inFlight       *egress.ReadLimit
}

// eventSize is the SDK's bound on one SSE event: above the response's, so
// that the response limit, which names what was too big, is met first (no
// event is larger than the response it belongs to). Zero, the SDK's
// default, when responses are not bounded.
func (r reads) eventSize() int {
	if r.response <= 0 {
		return 0
	}
	return int(r.response) + 64<<10
}

// ResponseCost is what the MCP SDK holds on the heap while it decodes a
// tool result or a page of tools/list, per byte and per JSON value of it,
// at most: a JSON-RPC envelope, then the result's own types (each content
// block, each input schema decoded and re-encoded). A tool result of
// 60,000 empty content blocks, 175 KB, held 19 MB. The engine's
// TestMCPDecodeCost holds it to what the SDK measured. An operation's
// responses are charged it until the operation returns (Set.Tools,
// Set.Call).
var ResponseCost = egress.Cost{PerByte: 8, PerValue: 800}

// limit returns a limit of max bytes named what, charged to the in-flight
// limit too.
func (r reads) limit(max int64, what string) *egress.ReadLimit {
	// Weighed: the SDK decodes each response whole, and what it decodes
	// to, not its bytes, is what the heap holds.
	return egress.NewReadLimit(max, what, r.inFlight).Weighed()
}

// opLimitKey is the context key of an operation's read limit.
type opLimitKey struct{}

// bound returns ctx carrying lim, which headerTransport applies to every
// response of the operation (the POST and any SSE reconnection of it), and
// ended as soon as lim is crossed, so that the operation stops waiting for
// a reply it will not read.
func (r reads) bound(ctx context.Context, lim *egress.ReadLimit) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithValue(ctx, opLimitKey{}, lim))
	go func() {
		select {
		case <-lim.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// responseLimit is the limit of a response to req: its operation's, else
// one of its own (the handshake, the session's DELETE).
func (r reads) responseLimit(req *http.Request) *egress.ReadLimit {
	if lim, ok := req.Context().Value(opLimitKey{}).(*egress.ReadLimit); ok {
		return lim
	}
	if r.response <= 0 && r.inFlight == nil {
		return nil
	}
	return r.limit(r.response, "MCP response")
}

// headerTransport adds a toolset's headers to every request of its session:
// POSTs, the DELETE that ends it, and any GET. The MCP SDK has no header
// option of its own; a RoundTripper is how its HTTPClient field is meant to
// be customised. It also sees the cancellation notices of calls given up
// begin and end, for Close (see notice.go).
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	// origin is the scheme and host of the toolset URL. Headers are only
	// added to requests for it: http.Client drops credentials when a redirect
	// leaves the host, and re-adding them here would undo that.
	origin url.URL
	// reads bound every response body while the SDK reads it.
	reads reads
	// stop, when not nil, aborts the goodbyes (DELETE, notices) in flight
	// when it ends (Set.CloseBy).
	stop context.Context
}

func newHeaderTransport(base http.RoundTripper, endpoint string, headers map[string]string, r reads) *headerTransport {
	t := &headerTransport{base: base, headers: make(http.Header, len(headers)), reads: r}
	for name, value := range headers {
		t.headers.Set(name, value)
	}
	if u, err := url.Parse(endpoint); err == nil {
		t.origin = url.URL{Scheme: u.Scheme, Host: u.Host}
	}
	return t
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	goodbye := req.Method == http.MethodDelete
	if end := noticeBegins(req); end != nil {
		// The notice is a notification: the server answers 202 with no
		// body, so it has ended when RoundTrip returns.
		defer end()
		goodbye = true
	}
	if goodbye && t.stop != nil {
		// The SDK closes a goodbye's body unread, as soon as it has it.
		ctx, cancel := context.WithCancel(req.Context())
		unhook := context.AfterFunc(t.stop, cancel)
		defer unhook()
		defer cancel()
		req = req.WithContext(ctx)
	}
	lim := t.reads.responseLimit(req)
	if err := lim.Err(); err != nil {
		return nil, err // the operation's reply is too large already
	}
	if len(t.headers) > 0 && req.URL.Scheme == t.origin.Scheme && req.URL.Host == t.origin.Host {
		// A RoundTripper must not modify the request it is given.
		req = req.Clone(req.Context())
		for name, values := range t.headers {
			req.Header[name] = values
		}
	}
	res, err := t.base.RoundTrip(req)
	if res != nil {
		res.Body = lim.Body(res.Body)
	}
	return res, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the base
// transport.
func (t *headerTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
