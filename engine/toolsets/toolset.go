package toolsets

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runnerd/lambda-runner/protocol"
)

// maxSessions is how many sessions a toolset may open in one Set: the first
// and one reconnect. See the package documentation.
const maxSessions = 2

// toolset is the connection state of one toolset of a Set.
type toolset struct {
	set     *Set
	def     protocol.Toolset
	timeout time.Duration
	http    *http.Client // adds def.Headers to every request
	scrub   scrubber

	mu sync.Mutex
	// cur is the live session or the connect in progress; nil before the
	// first use and after a break.
	cur *conn
	// opened counts the connects started, against maxSessions.
	opened int
	// sessions is every session opened, live or dropped, for Close.
	sessions []*mcp.ClientSession
	// lastFailure is the scrubbed reason of the last break or failed
	// connect, for the message of ErrUnavailable.
	lastFailure string
}

// conn is one session, or the connect that will produce it.
type conn struct {
	ready chan struct{} // closed once the connect has ended
	sess  *mcp.ClientSession
	err   *Error // set when the connect failed

	mu    sync.Mutex
	tools []Tool // the session's tool list, nil until fetched
	// listing is closed when the listing in progress ends; nil when none
	// is.
	listing chan struct{}
}

// acquire returns the toolset's session, starting the connect if there is
// none and the budget allows, and waiting for a connect in progress. The
// connect is not bound to ctx: other callers may be waiting for it too.
func (t *toolset) acquire(ctx context.Context) (*conn, error) {
	if t.set.ctx.Err() != nil {
		return nil, t.closedError()
	}
	if err := ctx.Err(); err != nil {
		return nil, err // don't spend a connect on a caller that left
	}
	t.mu.Lock()
	c := t.cur
	if c == nil {
		if t.opened >= maxSessions {
			msg := t.lastFailure
			t.mu.Unlock()
			return nil, &Error{
				Toolset: t.def.Name,
				Message: fmt.Sprintf("unavailable: %d sessions failed in this execution (last: %s)", maxSessions, msg),
				cause:   ErrUnavailable,
			}
		}
		c = &conn{ready: make(chan struct{})}
		if !t.set.goTracked(func() { t.connect(c) }) {
			t.mu.Unlock()
			return nil, t.closedError()
		}
		t.opened++
		t.cur = c
	}
	t.mu.Unlock()

	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c.err != nil {
		return nil, c.err
	}
	return c, nil
}

// connect opens c's session, bounded by the toolset's timeout and by Close.
// Its outcome is published as soon as the bound is reached, although the
// SDK may take longer to clean up (it tells the server about the aborted
// request); connect waits for that, so Close still waits for it.
func (t *toolset) connect(c *conn) {
	ctx, cancel := context.WithTimeout(t.set.ctx, t.timeout)
	defer cancel()
	type result struct {
		sess *mcp.ClientSession
		err  error
	}
	done := make(chan result, 1)
	go func() {
		if t.set.check != nil {
			if err := t.set.check(ctx, t.def.URL); err != nil {
				done <- result{nil, err}
				return
			}
		}
		transport := countingTransport{&mcp.StreamableClientTransport{
			Endpoint:   t.def.URL,
			HTTPClient: t.http,
			// Only request/response is needed; see the package documentation.
			DisableStandaloneSSE: true,
			MaxEventSize:         t.set.reads.eventSize(),
		}}
		sess, err := t.set.client.Connect(ctx, transport, nil)
		done <- result{sess, err}
	}()

	select {
	case r := <-done:
		t.connected(ctx, c, r.sess, r.err)
	case <-ctx.Done():
		t.connected(ctx, c, nil, ctx.Err())
		if r := <-done; r.sess != nil {
			_ = r.sess.Close() // connected too late: nobody is waiting
		}
	}
}

// connected publishes the outcome of c's connect, made under ctx.
func (t *toolset) connected(ctx context.Context, c *conn, sess *mcp.ClientSession, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer close(c.ready)
	if err == nil {
		c.sess = sess
		t.sessions = append(t.sessions, sess)
		return
	}
	e := &Error{Toolset: t.def.Name, Message: "connecting: " + t.scrub.scrub(err.Error())}
	var je *jsonrpc.Error
	switch {
	case t.set.ctx.Err() != nil:
		e = t.closedError()
	case ctx.Err() != nil:
		e.Message, e.cause = fmt.Sprintf("connecting: timed out after %v", t.timeout), ErrTimeout
	case errors.As(err, &je):
		e.cause = &jsonrpc.Error{Code: je.Code, Message: t.scrub.scrub(je.Message)}
	}
	c.err = e
	if t.cur == c {
		t.cur = nil
		t.lastFailure = e.Message
	}
}

// do runs op on the toolset's session. When op finds the session broken,
// the session is dropped so that the next use reconnects; when the server
// refused the request for an unknown session id, it never ran it, so op is
// retried once on a new session.
func (t *toolset) do(ctx context.Context, op func(*conn) error) error {
	for retried := false; ; retried = true {
		c, err := t.acquire(ctx)
		if err != nil {
			return err
		}
		err = op(c)
		if err == nil || !broken(err) {
			return err
		}
		t.drop(c, err)
		if retried || ctx.Err() != nil || !errors.Is(err, mcp.ErrSessionMissing) || !t.canOpen() {
			return err
		}
	}
}

// broken reports whether err means that the session cannot serve any more
// request. Other errors (a JSON-RPC error, a refused connection, an HTTP
// 5xx) leave the session usable, as the SDK does.
func broken(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed)
}

// drop forgets c's session after it broke with err, and closes it in the
// background (Close closes it anyway, should the Set be closed already).
func (t *toolset) drop(c *conn, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur != c {
		return // another caller dropped it first
	}
	t.cur = nil
	t.lastFailure = t.scrub.scrub(err.Error())
	t.set.goTracked(func() { _ = c.sess.Close() })
}

// canOpen reports whether a session is live or a new one may be opened.
func (t *toolset) canOpen() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur != nil || t.opened < maxSessions
}

// takeSessions empties the toolset for Close and returns every session it
// opened.
func (t *toolset) takeSessions() []*mcp.ClientSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sessions
	t.sessions, t.cur = nil, nil
	return s
}

func (t *toolset) closedError() *Error {
	return &Error{Toolset: t.def.Name, Message: ErrClosed.Error(), cause: ErrClosed}
}

// listTools returns the session's tools, fetching every page on first use,
// at most maxPages of them (0 for no bound). Concurrent first uses may each
// fetch the list; the result is the same.
func (c *conn) listTools(ctx context.Context, maxPages int) ([]Tool, error) {
	// One listing at a time: callers that arrive while one is in progress
	// (sixteen nodes of a map, say) wait for its list rather than each
	// having the server send it and the SDK decode it again. A waiter
	// whose listing failed lists itself.
	for {
		c.mu.Lock()
		if c.tools != nil {
			cached := c.tools
			c.mu.Unlock()
			return slices.Clone(cached), nil
		}
		wait := c.listing
		if wait == nil {
			c.listing = make(chan struct{})
			c.mu.Unlock()
			break
		}
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	tools, err := c.fetchTools(ctx, maxPages)
	c.mu.Lock()
	if err == nil {
		c.tools = tools
	}
	close(c.listing)
	c.listing = nil
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return slices.Clone(tools), nil
}

// fetchTools asks the server for every page of its tool list.
func (c *conn) fetchTools(ctx context.Context, maxPages int) ([]Tool, error) {
	tools := []Tool{}
	params := &mcp.ListToolsParams{}
	for page := 1; ; page++ {
		res, err := c.sess.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, tool := range res.Tools {
			tt, err := convertTool(tool)
			if err != nil {
				return nil, err
			}
			tools = append(tools, tt)
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		if maxPages > 0 && page >= maxPages {
			return nil, &Error{Message: fmt.Sprintf("tools/list still had more pages after %d", maxPages), cause: ErrTooManyPages}
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}
