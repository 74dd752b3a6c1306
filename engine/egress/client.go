package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/protocol"
)

// Client makes the http node requests of ONE execution: it holds the
// validated policy, counts requests against maxRequests and owns a
// transport, so no connection outlives the execution that opened it (call
// Close). It is safe for concurrent use by the execution's nodes.
type Client struct {
	pol       policy
	transport *http.Transport
	rt        http.RoundTripper // transport, wrapped by Options.Wrap

	maxBytes      int64
	bytesRule     string // names the byte limit in messages: the policy's or the runner's
	timeout       time.Duration
	maxRedirects  int
	redirectsRule string
	maxRequests   int
	requestsRule  string

	mu   sync.Mutex
	sent int
}

// New validates the request's HTTP policy and returns a client for one
// execution. Policy problems are *protocol.Detail values (joined with
// errors.Join when there are several). Policy limits above the operator's
// (Options) are clipped to them; zero means the operator's.
func New(p protocol.HTTPPolicy, o Options) (*Client, error) {
	pol, err := compilePolicy(p)
	if err != nil {
		return nil, err
	}
	l := o.limits()
	c := &Client{
		pol:           pol,
		maxBytes:      l.maxBytes,
		bytesRule:     fmt.Sprintf("the runner's maxResponseBytes limit (%d)", l.maxBytes),
		timeout:       l.timeout,
		maxRedirects:  l.maxRedirects,
		redirectsRule: fmt.Sprintf("the runner's maxRedirects limit (%d)", l.maxRedirects),
		maxRequests:   l.maxRequests,
		requestsRule:  fmt.Sprintf("the runner's maxRequests limit (%d)", l.maxRequests),
	}
	if p.MaxResponseBytes > 0 && p.MaxResponseBytes < c.maxBytes {
		c.maxBytes, c.bytesRule = p.MaxResponseBytes, fmt.Sprintf("maxResponseBytes (%d)", p.MaxResponseBytes)
	}
	if p.MaxRequests > 0 && p.MaxRequests < c.maxRequests {
		c.maxRequests, c.requestsRule = p.MaxRequests, fmt.Sprintf("maxRequests (%d)", p.MaxRequests)
	}
	if t := time.Duration(p.TimeoutMs) * time.Millisecond; t > 0 && t < c.timeout {
		c.timeout = t
	}
	if p.MaxRedirects != nil && *p.MaxRedirects < c.maxRedirects {
		c.maxRedirects, c.redirectsRule = *p.MaxRedirects, fmt.Sprintf("maxRedirects (%d)", *p.MaxRedirects)
	}

	g := &guard{
		allowPrivate: p.AllowPrivateNetwork,
		allow:        slices.Clone(o.AllowPrefixes),
		blocked:      slices.Clone(o.Blocked),
	}
	c.transport = newTransport(g, o.Dial)
	c.rt = c.transport
	if o.Wrap != nil {
		c.rt = o.Wrap(c.transport)
	}
	return c, nil
}

// Close releases the client's idle connections. Call it when the
// execution ends; the client must not be used afterwards.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// Requests reports how many requests (hops, redirects included) the
// client has let through its checks, for usage.httpRequests. A hop the
// address guard refused at dial time counts: it was attempted.
func (c *Client) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}

// authError marks an Authorize error on its way through http.Client, so
// Do can return it unchanged.
type authError struct{ err error }

func (e *authError) Error() string { return e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

// Do sends r, following redirects under the same checks, and reads the
// response. Refusals and failures are *Error values, except that an
// Authorize error is returned as is and, when ctx ends first, the error
// wraps ctx.Err() (so the engine can tell cancellation and its own
// deadlines from a request timeout).
func (c *Client) Do(ctx context.Context, r *Request) (*Response, error) {
	out, err := prepare(r)
	if err != nil {
		return nil, err
	}
	timeout := c.timeout
	if r.Timeout > 0 && r.Timeout < timeout {
		timeout = r.Timeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if err := c.hop(tctx, r, out.method, out.host); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", out.method, describe(out.url), ctx.Err())
		}
		return nil, err
	}
	req, err := out.request(tctx)
	if err != nil {
		return nil, err
	}
	cur := out.url // the URL of the hop in flight, for messages
	resp, err := c.redirecting(r, out, &cur).Do(req)
	if err != nil {
		return nil, c.failure(ctx, tctx, out.method, cur, timeout, err)
	}
	defer resp.Body.Close()
	return c.read(ctx, tctx, r, out.method, resp, timeout)
}

// outgoing is a Request validated and encoded, before any policy check.
type outgoing struct {
	method          string
	url             *url.URL
	host            string
	header          http.Header
	body            []byte // nil for none
	explicitReferer bool   // the node set Referer itself
}

// prepare validates r and encodes its URL, query, headers and body.
func prepare(r *Request) (*outgoing, error) {
	method, err := normMethod(r.Method)
	if err != nil {
		return nil, err
	}
	if !ValidResponseType(r.ResponseType) {
		return nil, failed("responseType must be auto, json or text")
	}
	u, host, err := parseTarget(r.URL)
	if err != nil {
		return nil, err
	}
	if err := appendQuery(u, r.Query); err != nil {
		return nil, err
	}
	header, err := buildHeader(r)
	if err != nil {
		return nil, err
	}
	body, ctype, err := encodeBody(r.Body)
	if err != nil {
		return nil, err
	}
	if ctype != "" && header.Get("Content-Type") == "" {
		header.Set("Content-Type", ctype)
	}
	_, explicitReferer := header["Referer"]
	return &outgoing{method: method, url: u, host: host, header: header, body: body, explicitReferer: explicitReferer}, nil
}

// request builds the first hop's *http.Request under ctx.
func (o *outgoing) request(ctx context.Context) (*http.Request, error) {
	var rd io.Reader
	if o.body != nil {
		rd = bytes.NewReader(o.body) // NewRequest sets GetBody, so 307/308 can resend it
	}
	req, err := http.NewRequestWithContext(ctx, o.method, o.url.String(), rd)
	if err != nil {
		return nil, failed("invalid URL")
	}
	// Send exactly the URL that was checked, not a re-parse of it.
	req.URL, req.Host = o.url, o.url.Host
	req.Header = o.header
	return req, nil
}

// redirecting returns the http.Client for one Do: every redirect is
// re-checked as a hop of its own, and *cur tracks the hop in flight.
func (c *Client) redirecting(r *Request, o *outgoing, cur **url.URL) *http.Client {
	return &http.Client{
		Transport: c.rt,
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if c.maxRedirects == 0 {
				// maxRedirects 0: do not follow, hand the 3xx to the node.
				return http.ErrUseLastResponse
			}
			*cur = next.URL
			if len(via) > c.maxRedirects {
				return failed("%s %s: stopped after %d redirects, %s", o.method, describe(o.url), c.maxRedirects, c.redirectsRule)
			}
			nextHost, err := checkTarget(next.URL)
			if err == nil {
				err = c.hop(next.Context(), r, next.Method, nextHost)
			}
			var e *Error
			if errors.As(err, &e) {
				return &Error{Code: e.Code, Message: "redirect refused: " + e.Message}
			}
			if err != nil {
				return &authError{err}
			}
			if !o.explicitReferer {
				// Go sets Referer to the previous URL, query included,
				// which would hand its secrets to the next host.
				next.Header.Del("Referer")
			}
			return nil
		},
	}
}

// read reads resp's body within the byte limit and decodes it as r asks.
func (c *Client) read(ctx, tctx context.Context, r *Request, method string, resp *http.Response, timeout time.Duration) (*Response, error) {
	final := resp.Request.URL
	finalHost := final.Hostname()
	if method != http.MethodHead && resp.ContentLength > c.maxBytes {
		return nil, failed("response body from %s exceeds %s", finalHost, c.bytesRule)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return nil, c.failure(ctx, tctx, method, final, timeout, err)
	}
	if int64(len(data)) > c.maxBytes {
		return nil, failed("response body from %s exceeds %s", finalHost, c.bytesRule)
	}
	v, err := decodeBody(r.ResponseType, resp.Header.Get("Content-Type"), data, finalHost, r.MaxDecoded)
	if err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Headers: flattenHeader(resp.Header), Body: v}, nil
}

// hop runs the checks every hop passes before it may be sent: policy,
// bound secrets, the permission gate, then the request budget.
func (c *Client) hop(ctx context.Context, r *Request, method, host string) error {
	if err := c.pol.checkHost(host); err != nil {
		return err
	}
	if err := c.pol.checkMethod(method, host); err != nil {
		return err
	}
	for _, s := range r.Bound {
		if len(s.Hosts) == 0 {
			continue
		}
		if !slices.ContainsFunc(s.Hosts, func(p string) bool { return glob.MatchHost(p, host) }) {
			// Name the hosts the secret is bound to, never the secret.
			return blocked("request to host %s carries a secret bound to %s", host, strings.Join(s.Hosts, ", "))
		}
	}
	if r.Authorize != nil {
		if err := r.Authorize(ctx, host); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent >= c.maxRequests {
		return blocked("%s reached", c.requestsRule)
	}
	c.sent++
	return nil
}

// failure turns an error from http.Client or the body read into what Do
// returns.
func (c *Client) failure(ctx, tctx context.Context, method string, u *url.URL, timeout time.Duration, err error) error {
	var ae *authError
	if errors.As(err, &ae) {
		return ae.err
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var rf *refusal
	if errors.As(err, &rf) {
		return blocked("%s %s refused: %v", method, describe(u), rf)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s %s: %w", method, describe(u), ctx.Err())
	}
	if errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return failed("%s %s timed out after %v", method, describe(u), timeout)
	}
	return failed("%s %s failed: %s", method, describe(u), transportReason(err))
}
