package egress

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"
)

// Defaults for the zero Options. Each limit in Options is both the default
// and the ceiling: a request's policy may lower it, never raise it, so an
// operator can bound what any server asks of the function.
const (
	// DefaultMaxResponseBytes is 1 MiB: a response body becomes node output
	// held in memory and often fed to a model, so large downloads are not
	// what the http node is for.
	DefaultMaxResponseBytes int64 = 1 << 20
	// DefaultTimeout bounds one request including redirects and reading the
	// body.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxRedirects matches what browsers and curl users expect to be
	// enough, and is half of Go's own limit of 10.
	DefaultMaxRedirects = 5
	// DefaultMaxRequests is the per-execution request budget when the
	// policy sets none (maxRequests 0). It is large enough for a map over a
	// few hundred items, small enough that a runaway workflow cannot turn a
	// Lambda into a load generator.
	DefaultMaxRequests = 1000
)

// Options are the operator's settings, fixed per process. The zero value
// is usable and safe.
type Options struct {
	// MaxResponseBytes caps a response body (after decompression);
	// 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Timeout caps one request (all hops and the body); 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxRedirects caps the redirects one request follows; 0 means
	// DefaultMaxRedirects, a negative value follows none.
	MaxRedirects int
	// MaxRequests caps the requests (hops) of one execution; 0 means
	// DefaultMaxRequests.
	MaxRequests int
	// AllowPrefixes admits addresses the guard would refuse, for example a
	// VPC endpoint subnet. It never admits metadata addresses or Blocked.
	AllowPrefixes []netip.Prefix
	// Blocked are never reachable, whatever the policy or AllowPrefixes say:
	// the Lambda runtime API (see RuntimeAPIAddrs). Port 0 blocks every
	// port. When the address is one of this machine's own (loopback,
	// unspecified or an interface address), the port is blocked on all of
	// them, because a listener on 0.0.0.0 answers on each.
	Blocked []netip.AddrPort
	// Wrap, when not nil, wraps each execution's guarded transport, for
	// example to add the trace context to requests. The guard stays
	// beneath it, so every connection is checked whatever Wrap does.
	Wrap func(http.RoundTripper) http.RoundTripper
	// Dial, when not nil, makes every connection instead of the network:
	// addr is the host:port the request named, tls says whether it is an
	// https one, and the connection returned is taken as past the TLS
	// handshake (plain HTTP/1.1 is spoken on it). No name is resolved and
	// the address guard is not asked: nothing leaves the process. Only
	// `runnerctl test` sets it, to answer every request from the mocks it
	// serves; a runner never does.
	Dial func(ctx context.Context, addr string, tls bool) (net.Conn, error)
}

// limits are Options with defaults applied.
type limits struct {
	maxBytes     int64
	timeout      time.Duration
	maxRedirects int
	maxRequests  int
}

func (o Options) limits() limits {
	l := limits{
		maxBytes:     o.MaxResponseBytes,
		timeout:      o.Timeout,
		maxRedirects: o.MaxRedirects,
		maxRequests:  o.MaxRequests,
	}
	if l.maxBytes <= 0 {
		l.maxBytes = DefaultMaxResponseBytes
	}
	if l.timeout <= 0 {
		l.timeout = DefaultTimeout
	}
	switch {
	case l.maxRedirects == 0:
		l.maxRedirects = DefaultMaxRedirects
	case l.maxRedirects < 0:
		l.maxRedirects = 0
	}
	if l.maxRequests <= 0 {
		l.maxRequests = DefaultMaxRequests
	}
	return l
}

// RuntimeAPIAddrs returns the addresses to put in Options.Blocked for the
// value of AWS_LAMBDA_RUNTIME_API ("127.0.0.1:9001" on Lambda and under the
// runtime interface emulator). An empty value (not under Lambda) yields
// nothing. A host name is resolved once, now, with ctx.
func RuntimeAPIAddrs(ctx context.Context, value string) ([]netip.AddrPort, error) {
	if value == "" {
		return nil, nil
	}
	host, portStr, err := net.SplitHostPort(value)
	if err != nil {
		return nil, fmt.Errorf("egress: runtime API address %q: %v", value, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("egress: runtime API address %q: bad port", value)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(ip.Unmap(), uint16(port))}, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("egress: runtime API address %q: %v", value, err)
	}
	out := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
	}
	return out, nil
}
