package toolsets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/protocol"
)

// Defaults for [Options].
const (
	DefaultClientName    = "lambda-runner"
	DefaultClientVersion = "1"
	DefaultTimeout       = 60 * time.Second
)

// Options configures a [Set].
type Options struct {
	// HTTPClient sends every request, with the toolset headers added by a
	// wrapping transport; its Timeout should be zero, as it would cut
	// streamed responses (each operation has its own deadline). Nil means
	// a private client whose connections Close releases; a client given
	// here stays the caller's, and Close leaves its idle connections alone.
	HTTPClient *http.Client
	// CheckEndpoint, when not nil, is asked about each toolset URL before
	// its first connection; an error fails the connection at once, with the
	// error's message (egress.Endpoints.Check says what was blocked and
	// why).
	CheckEndpoint func(ctx context.Context, rawURL string) error
	// ClientName and ClientVersion are announced to servers as the MCP
	// client implementation; empty means DefaultClientName and
	// DefaultClientVersion.
	ClientName, ClientVersion string
	// DefaultTimeout bounds each Tools or Call of a toolset without
	// timeoutMs; zero means DefaultTimeout.
	DefaultTimeout time.Duration
	// MaxResponseBytes bounds the body of each response (a tool call's
	// result, including every SSE event it is read through, and the
	// responses of the handshake) while it is read; MaxListBytes bounds
	// all the pages of one tool listing together and MaxListPages their
	// number. Zero means no bound; the engine sets them from its limits.
	MaxResponseBytes, MaxListBytes int64
	MaxListPages                   int
	// InFlight, when not nil, is charged with every response body being
	// read, across the Set and whatever else shares it.
	InFlight *egress.ReadLimit
}

// Set is the toolsets of one execution: one MCP session per toolset, opened
// lazily on first use, reused by every later call, and all closed by Close.
// It is safe for concurrent use.
type Set struct {
	client   *mcp.Client
	toolsets map[string]*toolset
	check    func(ctx context.Context, rawURL string) error
	reads    reads
	// ownTransport is the private transport made when Options.HTTPClient
	// is nil, whose idle connections Close releases.
	ownTransport *http.Transport

	// ctx is the parent of every connect, so that Close can abort them.
	ctx    context.Context
	cancel context.CancelFunc
	// stop ends the goodbyes (session DELETEs, cancellation notices) in
	// progress: CloseBy's bound.
	stop       context.Context
	stopCancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	// abandoned holds the calls given up by their context whose
	// cancellation notice has not ended yet; Close waits for them (see
	// notice.go).
	abandoned map[*callTrace]struct{}
	// ops counts the Tools and Call in progress, wg the goroutines the Set
	// starts (connects, closes of dropped sessions); Close waits for both.
	// Add is only called under mu while !closed, so no Add races with
	// Close's Wait.
	ops, wg sync.WaitGroup
}

// Tool is a tool a toolset offers. Its schemas are JSON Schema objects, as
// the server sent them; OutputSchema is nil when the tool has none. The
// schemas share memory with the Set's cache and must not be modified.
type Tool struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
}

// Result is the outcome of a tool call that reached the tool. Content holds
// the MCP content blocks as JSON ({"type":"text","text":...}, ...), never
// nil; Structured is the decoded structuredContent, nil when absent. IsError
// reports a failure the tool itself returned: it is not a Go error, the
// engine decides what it means.
type Result struct {
	Content    []json.RawMessage
	Structured any
	IsError    bool
}

// New returns the Set of the toolsets defs, which must have passed Validate.
// It dials nothing: a toolset is only connected on its first use.
func New(defs []protocol.Toolset, opts Options) *Set {
	if opts.ClientName == "" {
		opts.ClientName = DefaultClientName
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = DefaultClientVersion
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	s := &Set{
		client:   mcp.NewClient(&mcp.Implementation{Name: opts.ClientName, Version: opts.ClientVersion}, nil),
		toolsets: make(map[string]*toolset, len(defs)),
		check:    opts.CheckEndpoint,
		reads:    reads{response: opts.MaxResponseBytes, list: opts.MaxListBytes, pages: opts.MaxListPages, inFlight: opts.InFlight},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.stop, s.stopCancel = context.WithCancel(context.Background())

	base := opts.HTTPClient
	if base == nil {
		s.ownTransport = http.DefaultTransport.(*http.Transport).Clone()
		// No Client.Timeout: it would cut long SSE responses; each
		// operation is bounded by its context instead.
		base = &http.Client{Transport: s.ownTransport}
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	for _, d := range defs {
		timeout := time.Duration(d.TimeoutMs) * time.Millisecond
		if timeout <= 0 {
			timeout = opts.DefaultTimeout
		}
		hc := *base // keeps the caller's redirect policy and jar
		hc.Transport = newHeaderTransport(rt, d.URL, d.Headers, s.reads)
		hc.Transport.(*headerTransport).stop = s.stop
		s.toolsets[d.Name] = &toolset{
			set:     s,
			def:     d,
			timeout: timeout,
			http:    &hc,
			scrub:   newScrubber(d.Headers, d.URL),
		}
	}
	return s
}

// Has reports whether the Set defines the toolset name.
func (s *Set) Has(name string) bool {
	_, ok := s.toolsets[name]
	return ok
}

// Tools returns every tool of the toolset, across all pages of the server's
// list. The list is fetched once per session and then served from memory.
// The toolset's timeout bounds the whole operation, connect included.
func (s *Set) Tools(ctx context.Context, toolset string) ([]Tool, error) {
	t, err := s.lookup(toolset, "")
	if err != nil {
		return nil, err
	}
	opCtx, end, err := s.begin(ctx, t, "")
	if err != nil {
		return nil, err
	}
	defer end()
	lim := s.reads.limit(s.reads.list, "tools/list").Costed(ResponseCost)
	defer lim.Release()
	opCtx, stop := s.reads.bound(opCtx, lim)
	defer stop()
	count := &listCount{max: MaxTools}
	opCtx = withListCount(opCtx, count)
	var tools []Tool
	err = t.do(opCtx, func(c *conn) (err error) {
		tools, err = c.listTools(opCtx, s.reads.pages)
		return err
	})
	if e := lim.Err(); e != nil {
		return nil, &Error{Toolset: t.def.Name, Message: e.Error(), cause: e}
	}
	if e := count.failure(); e != nil {
		return nil, &Error{Toolset: t.def.Name, Message: e.Message, cause: e.cause}
	}
	if err != nil {
		return nil, t.fail(ctx, opCtx, "", err)
	}
	return tools, nil
}

// Call calls tool on toolset with args (nil means no argument). The
// toolset's timeout bounds the whole call, connect included, and cancelling
// ctx stops it. A result with IsError set is returned as a Result, not as an
// error; every other failure is an *Error.
func (s *Set) Call(ctx context.Context, toolset, tool string, args map[string]any) (*Result, error) {
	t, err := s.lookup(toolset, tool)
	if err != nil {
		return nil, err
	}
	opCtx, end, err := s.begin(ctx, t, tool)
	if err != nil {
		return nil, err
	}
	defer end()
	lim := s.reads.limit(s.reads.response, "tool result").Costed(ResponseCost)
	defer lim.Release()
	opCtx, stop := s.reads.bound(opCtx, lim)
	defer stop()
	var res *mcp.CallToolResult
	err = t.do(opCtx, func(c *conn) (err error) {
		tr := s.newCallTrace()
		res, err = c.sess.CallTool(withTrace(opCtx, tr), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil && opCtx.Err() != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			// The SDK is telling the server, off this path.
			s.abandon(tr)
		}
		return err
	})
	if e := lim.Err(); e != nil {
		return nil, &Error{Toolset: t.def.Name, Tool: tool, Message: e.Error(), cause: e}
	}
	if err != nil {
		return nil, t.fail(ctx, opCtx, tool, err)
	}
	out, err := convertResult(res)
	if err != nil {
		return nil, t.fail(ctx, opCtx, tool, err)
	}
	return out, nil
}

// Close ends every session (telling each server, best effort), aborts
// connects in progress and releases the private HTTP connections; calls in
// progress fail at once with ErrClosed, and later ones too. Before ending
// the sessions it lets the servers hear of every call given up (up to
// noticeGrace for each notice to begin), since a server keeps running a
// call it was not told of. When Close
// returns, no goroutine or connection of the Set is left.
//
// Close is bounded but not instant: the SDK gives each goodbye request
// (the DELETE ending a session, the cancellation of an aborted request) up
// to 5 s, and the SDK's own server holds the DELETE until the session's
// running tools return. Sessions are closed concurrently.
//
// It returns the errors of ending the sessions, as *Error values, which only
// matter for logs: everything is released either way. Close is idempotent.
func (s *Set) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()

	s.cancel()
	// Operations return promptly once their contexts end; then no one uses
	// the sessions any more.
	s.ops.Wait()
	s.wg.Wait() // connects and closes of dropped sessions
	// The server ends a call given up only when told, and cannot be told
	// once the session is closing.
	s.awaitNotices()

	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, t := range s.toolsets {
		for _, sess := range t.takeSessions() {
			// Concurrently: each close may wait for a DELETE.
			wg.Go(func() {
				if err := sess.Close(); err != nil {
					mu.Lock()
					errs = append(errs, &Error{Toolset: t.def.Name, Message: "closing session: " + t.scrub.scrub(err.Error())})
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	s.stopCancel()
	if s.ownTransport != nil {
		s.ownTransport.CloseIdleConnections()
	}
	return errors.Join(errs...)
}

// CloseBy is Close bounded by ctx: when ctx ends, the goodbyes still in
// progress (a session DELETE a server does not answer, a cancellation
// notice) are aborted and CloseBy returns at once, leaving nothing of the
// Set running. The engine gives it what is left of the execution's
// reserve, so that closing never outlives the invocation.
func (s *Set) CloseBy(ctx context.Context) error {
	stop := context.AfterFunc(ctx, s.stopCancel)
	defer stop()
	return s.Close()
}

// begin starts one operation on t (on tool, empty for listing) and returns
// its context: ctx bounded by t's timeout and ended by Close, so that Close
// never waits for a slow server. end must be called when the operation is
// over.
func (s *Set) begin(ctx context.Context, t *toolset, tool string) (opCtx context.Context, end func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		e := t.closedError()
		e.Tool = tool
		return nil, nil, e
	}
	s.ops.Add(1)
	opCtx, cancel := context.WithTimeout(ctx, t.timeout)
	stop := context.AfterFunc(s.ctx, cancel)
	return opCtx, func() {
		stop()
		cancel()
		s.ops.Done()
	}, nil
}

// lookup finds a toolset, or fails with an *Error.
func (s *Set) lookup(name, tool string) (*toolset, error) {
	t, ok := s.toolsets[name]
	if !ok {
		return nil, &Error{Toolset: name, Tool: tool, Message: "no toolset of that name in runtime.toolsets", cause: ErrUnknownToolset}
	}
	return t, nil
}

// goTracked runs f in a goroutine that Close waits for. It reports false,
// without running f, once the Set is closed.
func (s *Set) goTracked(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Go(f)
	return true
}

// convertResult copies an SDK result into the package's types.
func convertResult(r *mcp.CallToolResult) (*Result, error) {
	out := &Result{
		Content:    make([]json.RawMessage, 0, len(r.Content)),
		Structured: r.StructuredContent,
		IsError:    r.IsError,
	}
	for i, c := range r.Content {
		b, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("encoding content block %d: %w", i, err)
		}
		out.Content = append(out.Content, b)
	}
	return out, nil
}

// convertTool copies an SDK tool into the package's type.
func convertTool(t *mcp.Tool) (Tool, error) {
	out := Tool{Name: t.Name, Description: t.Description}
	var err error
	if t.InputSchema != nil {
		if out.InputSchema, err = json.Marshal(t.InputSchema); err != nil {
			return Tool{}, fmt.Errorf("encoding the input schema of %q: %w", t.Name, err)
		}
	} else {
		// Models want an object schema; MCP tools without one take none.
		out.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if t.OutputSchema != nil {
		if out.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return Tool{}, fmt.Errorf("encoding the output schema of %q: %w", t.Name, err)
		}
	}
	return out, nil
}
