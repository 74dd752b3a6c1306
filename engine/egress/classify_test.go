package egress

import (
	"net/netip"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		ip   string
		want string
	}{
		// public
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"2606:4700:4700::1111", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
		// loopback
		{"127.0.0.1", ClassLoopback},
		{"127.255.255.254", ClassLoopback},
		{"::1", ClassLoopback},
		{"::ffff:127.0.0.1", ClassLoopback},
		{"::ffff:0:7f00:1", ClassLoopback}, // IPv4-translated
		{"::7f00:1", ClassLoopback},        // IPv4-compatible
		{"64:ff9b::7f00:1", ClassLoopback}, // NAT64
		{"2002:7f00:1::", ClassLoopback},   // 6to4
		// private
		{"10.1.2.3", ClassPrivate},
		{"172.16.0.1", ClassPrivate},
		{"172.31.255.255", ClassPrivate},
		{"192.168.1.1", ClassPrivate},
		{"fd12:3456::1", ClassPrivate},
		{"fc00::1", ClassPrivate},
		{"fec0::1", ClassPrivate},
		{"64:ff9b:1::a00:1", ClassPrivate},
		{"::ffff:10.0.0.1", ClassPrivate},
		{"2002:a00:1::1", ClassPrivate},
		// link-local
		{"169.254.1.1", ClassLinkLocal},
		{"fe80::1", ClassLinkLocal},
		{"fe80::1%eth0", ClassLinkLocal},
		// cgnat
		{"100.64.0.1", ClassCGNAT},
		{"100.127.255.255", ClassCGNAT},
		{"::ffff:100.100.1.1", ClassCGNAT},
		// metadata
		{"169.254.169.254", ClassMetadata},
		{"169.254.170.2", ClassMetadata},
		{"169.254.170.23", ClassMetadata},
		{"fd00:ec2::254", ClassMetadata},
		{"::ffff:169.254.169.254", ClassMetadata},
		{"64:ff9b::a9fe:a9fe", ClassMetadata},
		{"2002:a9fe:a9fe::", ClassMetadata},
		// unspecified
		{"0.0.0.0", ClassUnspecified},
		{"0.1.2.3", ClassUnspecified},
		{"::", ClassUnspecified},
		{"::ffff:0.0.0.0", ClassUnspecified},
		// multicast and broadcast
		{"224.0.0.1", ClassMulticast},
		{"239.255.255.250", ClassMulticast},
		{"255.255.255.255", ClassMulticast},
		{"ff02::1", ClassMulticast},
		// reserved
		{"240.0.0.1", ClassReserved},
		{"198.18.0.1", ClassReserved},
		{"192.0.2.10", ClassReserved},
		{"2001:db8::1", ClassReserved},
	}
	for _, tt := range tests {
		if got := Classify(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("Classify(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
	if got := Classify(netip.Addr{}); got != ClassUnspecified {
		t.Errorf("Classify(zero Addr) = %q, want %q", got, ClassUnspecified)
	}
}

// FuzzClassify checks that no address the standard library knows to be
// non-public is called public, and that the IPv6 forms wrapping an IPv4
// address classify like it.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::1", "169.254.169.254", "fd00:ec2::254", "8.8.8.8", "2002:a00:1::", "64:ff9b::a00:1"} {
		b := netip.MustParseAddr(s).As16()
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var a16 [16]byte
		copy(a16[:], b)
		for _, ip := range []netip.Addr{netip.AddrFrom16(a16), netip.AddrFrom4([4]byte(a16[12:]))} {
			class := Classify(ip)
			if class == "" && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
				ip.IsMulticast() || ip.IsUnspecified() || ip.IsLinkLocalMulticast() ||
				ip.IsInterfaceLocalMulticast()) {
				t.Errorf("Classify(%s) = public", ip)
			}
		}
		v4 := netip.AddrFrom4([4]byte(a16[12:]))
		want := Classify(v4)
		for _, wrapped := range []netip.Addr{
			netip.AddrFrom16(v4.As16()), // IPv4-mapped
			netip.AddrFrom16([16]byte{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: a16[12], 13: a16[13], 14: a16[14], 15: a16[15]}), // NAT64
			netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: a16[12], 3: a16[13], 4: a16[14], 5: a16[15], 15: 1}),             // 6to4
		} {
			if got := Classify(wrapped); got != want {
				t.Errorf("Classify(%s) = %q, want %q as for %s", wrapped, got, want, v4)
			}
		}
	})
}
