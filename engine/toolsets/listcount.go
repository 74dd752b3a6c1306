package toolsets

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxTools bounds the tools of one listing, all its pages together. The
// SDK spends about a quarter of a millisecond and tens of kilobytes on each
// tool of a page before returning it (it re-encodes and re-decodes every
// input schema), whatever the tool holds: twenty thousand empty tools, 58
// KB of text, took 113 MB and, sixteen at once, seconds of CPU that no
// deadline could stop. No model is offered more than 128 tools at a time.
const MaxTools = 1000

// A listCount counts the tools of one listing as its pages arrive, before
// the SDK decodes them: countingTransport's connections see each
// tools/list response whole, as JSON-RPC, whatever its framing.
type listCount struct {
	max int
	n   atomic.Int64
	// err is set when a page took the listing past max.
	mu  sync.Mutex
	err *Error
}

// listCountKey is the context key of an operation's listCount.
type listCountKey struct{}

// withListCount returns ctx carrying c, for the tools/list requests sent
// under it.
func withListCount(ctx context.Context, c *listCount) context.Context {
	return context.WithValue(ctx, listCountKey{}, c)
}

// failure returns the error of a listing that had too many tools, nil if it
// did not.
func (c *listCount) failure() *Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// countingTransport is the session's transport with each tools/list
// response counted before the SDK decodes it.
type countingTransport struct {
	mcp.Transport
}

func (t countingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Connection: conn, pending: map[jsonrpc.ID]*listCount{}}, nil
}

// countingConn remembers the tools/list requests written with a listCount
// and counts the tools of their responses as they are read.
type countingConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]*listCount
}

func (c *countingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		if lc, ok := ctx.Value(listCountKey{}).(*listCount); ok {
			c.mu.Lock()
			c.pending[req.ID] = lc
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	res, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok {
		return msg, err
	}
	c.mu.Lock()
	lc := c.pending[res.ID]
	delete(c.pending, res.ID)
	c.mu.Unlock()
	if lc == nil || res.Result == nil {
		return msg, err
	}
	// Each element is scanned, none decoded: an anyValue keeps nothing.
	var page struct {
		Tools []anyValue `json:"tools"`
	}
	if json.Unmarshal(res.Result, &page) != nil {
		return msg, err // not a listing the SDK can decode either
	}
	if total := lc.n.Add(int64(len(page.Tools))); total > int64(lc.max) {
		e := &Error{Message: fmt.Sprintf("tools/list lists more than %d tools", lc.max), cause: ErrTooManyTools}
		lc.mu.Lock()
		if lc.err == nil {
			lc.err = e
		}
		lc.mu.Unlock()
		// The SDK is handed an error in the page's place, which it returns
		// to the listing without decoding anything.
		return &jsonrpc.Response{ID: res.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: e.Message}}, nil
	}
	return msg, err
}

// anyValue is any JSON value, scanned and dropped.
type anyValue struct{}

func (*anyValue) UnmarshalJSON([]byte) error { return nil }
