package egress

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// newTransport is the one constructor of a guarded transport: every
// outbound connection of an execution (http nodes, MCP toolsets, model
// providers) is dialled through one of these, so the guard's address rules
// run on every connection, redirects included, after DNS.
func newTransport(g *guard, dial func(ctx context.Context, addr string, tls bool) (net.Conn, error)) *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	t := &http.Transport{
		// No proxy, whatever HTTP_PROXY says: through a proxy the guard
		// would only ever see the proxy's address.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true, // a custom DialContext turns HTTP/2 off otherwise
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           32,
		IdleConnTimeout:        30 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 256 << 10,
	}
	if dial != nil {
		// Options.Dial: every connection is the caller's, TLS included.
		t.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr, false) }
		t.DialTLSContext = func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr, true) }
		t.ForceAttemptHTTP2 = false
	}
	return t
}

// Endpoints guards the connections to endpoints the operator configured
// rather than the workflow: MCP toolset URLs and model base URLs. Those may
// be private or loopback addresses (a VPC-hosted MCP server, a Lambda
// extension), but never link-local or metadata addresses, nor the Lambda
// runtime API (Options.Blocked). Make one per process and share it.
type Endpoints struct {
	guard  *guard
	client *http.Client
	dialed bool // Options.Dial makes the connections: no name is resolved
}

// maxEndpointRedirects bounds the redirects of an endpoint request; each
// hop is dialled through the guard again.
const maxEndpointRedirects = 5

// NewEndpoints returns the guard for operator-configured endpoints. Only
// o.Blocked, o.AllowPrefixes and o.Dial are used. wrap, when not nil, wraps the
// guarded transport (for example with tracing); the guard stays beneath
// it, so whatever the wrapper does, every connection is checked.
func NewEndpoints(o Options, wrap func(http.RoundTripper) http.RoundTripper) *Endpoints {
	g := &guard{
		allowPrivate: true,
		allow:        slices.Clone(o.AllowPrefixes),
		blocked:      slices.Clone(o.Blocked),
	}
	var rt http.RoundTripper = newTransport(g, o.Dial)
	if wrap != nil {
		rt = wrap(rt)
	}
	e := &Endpoints{guard: g, dialed: o.Dial != nil}
	e.client = &http.Client{
		Transport: rt,
		// No Timeout: it would cut streamed responses; every caller bounds
		// its operations with a context.
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if len(via) > maxEndpointRedirects {
				return fmt.Errorf("stopped after %d redirects", maxEndpointRedirects)
			}
			// A literal address is refused here, with a clear message; a
			// name is checked when dialled.
			return e.checkLiteral(next.URL)
		},
	}
	return e
}

// Client returns the guarded client. Callers must not change it.
func (e *Endpoints) Client() *http.Client { return e.client }

// Check refuses an endpoint URL whose host is, or resolves to, an address
// the guard would refuse, before any connection is made, with an *Error
// (HTTP_BLOCKED) saying which address and why. The dial-time check still
// runs on every connection, so a name that later resolves elsewhere (DNS
// rebinding) is refused too.
func (e *Endpoints) Check(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return blocked("endpoint %q is not an absolute URL", redactedURL(u))
	}
	if err := e.checkLiteral(u); err != nil || u.Hostname() == "" {
		return err
	}
	if _, err := netip.ParseAddr(u.Hostname()); err == nil || e.dialed {
		return nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		// Not ours to report: the connection will fail with the SDK's
		// own message.
		return nil
	}
	port := endpointPort(u)
	for _, ip := range ips {
		if err := e.guard.check(netip.AddrPortFrom(ip, port)); err != nil {
			return endpointRefused(u, err)
		}
	}
	return nil
}

// checkLiteral refuses u when its host is a forbidden IP literal.
func (e *Endpoints) checkLiteral(u *url.URL) error {
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	if err := e.guard.check(netip.AddrPortFrom(ip, endpointPort(u))); err != nil {
		return endpointRefused(u, err)
	}
	return nil
}

// endpointPort is u's port, or its scheme's default.
func endpointPort(u *url.URL) uint16 {
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(p)
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}

// endpointRefused reports the guard's refusal of u (err, from guard.check).
func endpointRefused(u *url.URL, err error) error {
	return blocked("endpoint %s blocked by the egress guard: %v", redactedURL(u), err)
}

// redactedURL names an endpoint as describe does (its query and user
// information may hold keys), or "(invalid)" for a URL that did not parse.
func redactedURL(u *url.URL) string {
	if u == nil {
		return "(invalid)"
	}
	return describe(u)
}
