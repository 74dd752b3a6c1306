package egress

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
)

// guard decides, for each address about to be dialled, whether the
// connection may be made. It runs as net.Dialer.Control: after DNS, after
// the socket exists, before connect, once per address tried, so neither a
// host name that resolves to an internal address nor a redirect escapes it.
type guard struct {
	allowPrivate bool
	allow        []netip.Prefix
	blocked      []netip.AddrPort
}

// privateClasses are what allowPrivateNetwork (and an operator-configured
// endpoint) admits. Unspecified, multicast and reserved addresses have no
// business in a workflow; the operator can still admit them with
// AllowPrefixes. Link-local addresses are never admitted: they hold the
// metadata and credential endpoints of every cloud.
var privateClasses = []string{ClassLoopback, ClassPrivate, ClassCGNAT}

// refusal is the dial error the guard returns; the client turns it into an
// HTTP_BLOCKED *Error naming the host.
type refusal struct {
	addr   netip.AddrPort
	reason string
}

func (r *refusal) Error() string { return fmt.Sprintf("address %s refused: %s", r.addr, r.reason) }

// control is the net.Dialer.Control hook.
func (g *guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// The dialer always hands over an IP literal; anything else is a
		// surprise, and surprises are refused.
		return &refusal{reason: "not an IP address and port"}
	}
	return g.check(ap)
}

// check reports why ap may not be dialled, or nil.
func (g *guard) check(ap netip.AddrPort) error {
	ip := ap.Addr().WithZone("").Unmap()
	ap = netip.AddrPortFrom(ip, ap.Port())
	if g.isBlocked(ip, ap.Port()) {
		return &refusal{ap, "blocked by the runner (never reachable)"}
	}
	class := Classify(ip)
	switch class {
	case ClassMetadata:
		return &refusal{ap, "a cloud metadata address (never reachable)"}
	case ClassLinkLocal:
		return &refusal{ap, "a link-local address (never reachable)"}
	}
	if class == "" {
		return nil
	}
	for _, p := range g.allow {
		if p.Contains(ip) {
			return nil
		}
	}
	if g.allowPrivate && slices.Contains(privateClasses, class) {
		return nil
	}
	if slices.Contains(privateClasses, class) {
		return &refusal{ap, "a " + class + " address (allowPrivateNetwork is off)"}
	}
	return &refusal{ap, "a " + class + " address"}
}

func (g *guard) isBlocked(ip netip.Addr, port uint16) bool {
	ip = carried(ip)
	for _, b := range g.blocked {
		if b.Port() != 0 && b.Port() != port {
			continue
		}
		bip := carried(b.Addr().WithZone(""))
		if bip == ip || (isLocal(bip) && isLocal(ip)) {
			return true
		}
	}
	return false
}

// isLocal reports whether ip reaches this machine: loopback, unspecified
// (which Linux dials as the local host) or an address of one of its own
// interfaces.
func isLocal(ip netip.Addr) bool {
	return ip.IsLoopback() || ip.IsUnspecified() || localAddrs()[ip]
}

// localAddrs are the machine's interface addresses, read once: a Lambda
// sandbox's interfaces do not change while it lives.
var localAddrs = sync.OnceValue(func() map[netip.Addr]bool {
	m := make(map[netip.Addr]bool)
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return m
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				m[ip.Unmap()] = true
			}
		}
	}
	return m
})
