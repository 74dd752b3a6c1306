// Package client talks Runner protocol v1 to a runner: capabilities,
// executions and their NDJSON event stream, decoded into protocol types.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/runnerd/lambda-runner/protocol"
)

// DefaultURL is where `runner -dev` listens.
const DefaultURL = "http://127.0.0.1:8080"

// Client is a runner at URL reached with a bearer token. The zero value
// talks to DefaultURL without a token.
type Client struct {
	// URL is the runner's base URL (a trailing slash is fine).
	URL string
	// Token is sent as Authorization: Bearer; never printed.
	Token string
	// HTTP is the client used; http.DefaultClient if nil.
	HTTP *http.Client
}

// StatusError is a runner's refusal: any status but 200, with the protocol
// error body when it had one.
type StatusError struct {
	Status   int
	Response protocol.ErrorResponse
	// Body is the raw response body.
	Body []byte
}

func (e *StatusError) Error() string {
	if e.Response.Error.Code == "" {
		return fmt.Sprintf("runner answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("runner answered %d %s: %s", e.Status, e.Response.Error.Code, e.Response.Error.Message)
}

func (c *Client) endpoint(path string) string {
	base := c.URL
	if base == "" {
		base = DefaultURL
	}
	return strings.TrimRight(base, "/") + path
}

func (c *Client) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint(path), rd)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", protocol.ContentTypeJSON)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		se := &StatusError{Status: resp.StatusCode, Body: raw}
		_ = json.Unmarshal(raw, &se.Response)
		return nil, se
	}
	return resp, nil
}

// MaxCapabilitiesBytes bounds the capabilities document read: a runner's
// is a few kilobytes, so a longer one is a broken or hostile runner (one
// that never ends its body grew runnerctl by 3.7 GB in 5 s).
const MaxCapabilitiesBytes = 8 << 20

// ErrCapabilitiesTooLarge says the document exceeded MaxCapabilitiesBytes.
var ErrCapabilitiesTooLarge = fmt.Errorf("capabilities longer than %d bytes", MaxCapabilitiesBytes)

// Capabilities fetches GET /v1/capabilities, decoded and raw.
func (c *Client) Capabilities(ctx context.Context) (protocol.Capabilities, []byte, error) {
	var caps protocol.Capabilities
	resp, err := c.do(ctx, http.MethodGet, protocol.PathCapabilities, nil)
	if err != nil {
		return caps, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxCapabilitiesBytes+1))
	if err != nil {
		return caps, nil, fmt.Errorf("reading capabilities: %w", err)
	}
	if len(raw) > MaxCapabilitiesBytes {
		return caps, nil, ErrCapabilitiesTooLarge
	}
	if err := json.Unmarshal(raw, &caps); err != nil {
		return caps, raw, fmt.Errorf("capabilities are not a JSON object: %w", err)
	}
	return caps, raw, nil
}

// Execute posts an execution request. On 200 it returns the event stream,
// which the caller must Close; any other status is a *StatusError.
func (c *Client) Execute(ctx context.Context, body []byte) (*Stream, error) {
	resp, err := c.do(ctx, http.MethodPost, protocol.PathExecutions, body)
	if err != nil {
		return nil, err
	}
	return &Stream{body: resp.Body, r: bufio.NewReader(resp.Body)}, nil
}

// Stream is an execution's NDJSON event stream.
type Stream struct {
	body io.ReadCloser
	r    *bufio.Reader
	// Observe, when set, is told of every event Next decodes (run
	// --save-test keeps them).
	Observe func(protocol.Event)
}

// MaxLineBytes bounds one event line: a runner's own maxEventBytes is far
// smaller, so a longer line is a broken or hostile runner, not an event.
const MaxLineBytes = 16 << 20

// ErrLineTooLong says a line exceeded MaxLineBytes.
var ErrLineTooLong = fmt.Errorf("event line longer than %d bytes", MaxLineBytes)

// ErrNoTerminal says a stream ended without its terminal event.
var ErrNoTerminal = errors.New("stream ended before its terminal event")

// Next returns the next line, byte for byte with its newline, and its event.
// A line that is not a known event returns the line with the decoding
// error; the end of the stream is io.EOF.
func (s *Stream) Next() ([]byte, protocol.Event, error) {
	var line []byte
	var err error
	for {
		frag, rerr := s.r.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > MaxLineBytes {
			return nil, nil, ErrLineTooLong
		}
		if !errors.Is(rerr, bufio.ErrBufferFull) {
			err = rerr
			break
		}
	}
	if len(line) == 0 {
		if err == nil {
			err = io.EOF
		}
		return nil, nil, err
	}
	ev, derr := Decode(line)
	if s.Observe != nil && ev != nil {
		s.Observe(ev)
	}
	return line, ev, derr
}

// Close ends the stream.
func (s *Stream) Close() error { return s.body.Close() }

// Decode turns one NDJSON line into its event type.
func Decode(line []byte) (protocol.Event, error) {
	var h protocol.Header
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, fmt.Errorf("event is not a JSON object: %w", err)
	}
	ev := protocol.NewEvent(h.Type)
	if ev == nil {
		return nil, fmt.Errorf("unknown event type %q", h.Type)
	}
	if err := json.Unmarshal(line, ev); err != nil {
		return nil, fmt.Errorf("%s event: %w", h.Type, err)
	}
	return ev, nil
}
