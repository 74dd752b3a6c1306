package egress

import "net/netip"

// Address classes reported by Classify. Only public addresses ("") are
// dialled by default.
const (
	ClassLoopback    = "loopback"
	ClassPrivate     = "private"     // RFC 1918, IPv6 unique local (and deprecated site-local)
	ClassLinkLocal   = "link-local"  // 169.254.0.0/16, fe80::/10
	ClassCGNAT       = "cgnat"       // 100.64.0.0/10, shared address space
	ClassMetadata    = "metadata"    // cloud instance/task metadata endpoints
	ClassUnspecified = "unspecified" // 0.0.0.0/8 and ::, which Linux dials as the local host
	ClassMulticast   = "multicast"   // including limited broadcast
	ClassReserved    = "reserved"    // documentation, benchmarking, future use
)

type classRange struct {
	prefix netip.Prefix
	class  string
}

// Order matters: the first matching range wins, so the single metadata
// addresses come before the link-local and private ranges holding them.
var v4Classes = []classRange{
	{netip.MustParsePrefix("169.254.169.254/32"), ClassMetadata}, // EC2, and most clouds
	{netip.MustParsePrefix("169.254.170.2/32"), ClassMetadata},   // ECS task credentials
	{netip.MustParsePrefix("169.254.170.23/32"), ClassMetadata},  // EKS Pod Identity
	{netip.MustParsePrefix("0.0.0.0/8"), ClassUnspecified},
	{netip.MustParsePrefix("127.0.0.0/8"), ClassLoopback},
	{netip.MustParsePrefix("10.0.0.0/8"), ClassPrivate},
	{netip.MustParsePrefix("172.16.0.0/12"), ClassPrivate},
	{netip.MustParsePrefix("192.168.0.0/16"), ClassPrivate},
	{netip.MustParsePrefix("169.254.0.0/16"), ClassLinkLocal},
	{netip.MustParsePrefix("100.64.0.0/10"), ClassCGNAT},
	{netip.MustParsePrefix("224.0.0.0/4"), ClassMulticast},
	{netip.MustParsePrefix("255.255.255.255/32"), ClassMulticast},
	{netip.MustParsePrefix("240.0.0.0/4"), ClassReserved},
	{netip.MustParsePrefix("192.0.0.0/24"), ClassReserved},  // IETF protocol assignments
	{netip.MustParsePrefix("192.0.2.0/24"), ClassReserved},  // TEST-NET-1
	{netip.MustParsePrefix("198.18.0.0/15"), ClassReserved}, // benchmarking, often used internally
	{netip.MustParsePrefix("198.51.100.0/24"), ClassReserved},
	{netip.MustParsePrefix("203.0.113.0/24"), ClassReserved},
}

var v6Classes = []classRange{
	{netip.MustParsePrefix("fd00:ec2::254/128"), ClassMetadata}, // EC2 IMDS over IPv6
	{netip.MustParsePrefix("fd00:ec2::23/128"), ClassMetadata},  // EKS Pod Identity over IPv6
	{netip.MustParsePrefix("::/128"), ClassUnspecified},
	{netip.MustParsePrefix("::1/128"), ClassLoopback},
	{netip.MustParsePrefix("64:ff9b:1::/48"), ClassPrivate}, // local-use NAT64 (RFC 8215)
	{netip.MustParsePrefix("fc00::/7"), ClassPrivate},
	{netip.MustParsePrefix("fec0::/10"), ClassPrivate}, // deprecated site-local
	{netip.MustParsePrefix("fe80::/10"), ClassLinkLocal},
	{netip.MustParsePrefix("ff00::/8"), ClassMulticast},
	{netip.MustParsePrefix("100::/64"), ClassReserved},      // discard-only
	{netip.MustParsePrefix("2001:db8::/32"), ClassReserved}, // documentation
	{netip.MustParsePrefix("3fff::/20"), ClassReserved},     // documentation (RFC 9637)
	{netip.MustParsePrefix("2001:2::/48"), ClassReserved},   // benchmarking
}

// IPv6 forms that carry an IPv4 address, which is what a translator or the
// kernel will actually reach. The IPv4 address is in the last 32 bits unless
// noted.
var (
	mapped     = netip.MustParsePrefix("::ffff:0:0/96")   // IPv4-mapped
	translated = netip.MustParsePrefix("::ffff:0:0:0/96") // SIIT IPv4-translated
	compatible = netip.MustParsePrefix("::/96")           // deprecated IPv4-compatible
	nat64      = netip.MustParsePrefix("64:ff9b::/96")    // well-known NAT64
	sixToFour  = netip.MustParsePrefix("2002::/16")       // 6to4: IPv4 in bits 16-47
)

// carried returns the IPv4 address an IPv6 address carries (see Classify),
// or ip itself.
func carried(ip netip.Addr) netip.Addr {
	if !ip.Is6() {
		return ip
	}
	b := ip.As16()
	switch {
	case mapped.Contains(ip), translated.Contains(ip), nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16]))
	case compatible.Contains(ip) && !ip.IsLoopback() && !ip.IsUnspecified():
		return netip.AddrFrom4([4]byte(b[12:16]))
	}
	return ip
}

// Classify reports the class of an address that the guard refuses by
// default, or "" for a public address. IPv4-mapped, IPv4-translated,
// IPv4-compatible, NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are
// classified by the IPv4 address they carry. Zones are ignored. The invalid
// zero Addr is "unspecified".
func Classify(ip netip.Addr) string {
	if !ip.IsValid() {
		return ClassUnspecified
	}
	ip = ip.WithZone("")
	if ip.Is6() {
		for _, r := range v6Classes {
			if r.prefix.Contains(ip) {
				return r.class
			}
		}
		b := ip.As16()
		switch {
		case mapped.Contains(ip), translated.Contains(ip), compatible.Contains(ip), nat64.Contains(ip):
			return Classify(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(ip):
			return Classify(netip.AddrFrom4([4]byte(b[2:6])))
		}
		return ""
	}
	for _, r := range v4Classes {
		if r.prefix.Contains(ip) {
			return r.class
		}
	}
	return ""
}
