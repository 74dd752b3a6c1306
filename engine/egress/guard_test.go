package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestGuardCheck exercises the dial-time decision as a pure function: the
// addresses here are never dialled.
func TestGuardCheck(t *testing.T) {
	runtimeAPI := netip.MustParseAddrPort("127.0.0.1:9001")
	tests := []struct {
		name  string
		guard guard
		addr  string
		// want is "" when the address may be dialled, else a fragment of
		// the refusal.
		want string
	}{
		{"public", guard{}, "8.8.8.8:443", ""},
		{"public v6", guard{}, "[2606:4700:4700::1111]:443", ""},
		{"private", guard{}, "10.0.0.1:80", "private address (allowPrivateNetwork is off)"},
		{"loopback", guard{}, "127.0.0.1:80", "loopback address"},
		{"mapped private", guard{}, "[::ffff:10.0.0.1]:80", "private address"},
		{"link-local v6 with zone", guard{}, "[fe80::1%eth0]:80", "link-local address"},
		{"cgnat", guard{}, "100.64.0.1:80", "cgnat address"},
		{"metadata", guard{}, "169.254.169.254:80", "metadata"},

		{"allowPrivate private", guard{allowPrivate: true}, "10.0.0.1:80", ""},
		{"allowPrivate loopback", guard{allowPrivate: true}, "127.0.0.1:8080", ""},
		{"allowPrivate cgnat", guard{allowPrivate: true}, "100.64.0.1:80", ""},
		{"allowPrivate link-local", guard{allowPrivate: true}, "169.254.10.10:80", "link-local address (never reachable)"},
		{"allowPrivate link-local v6", guard{allowPrivate: true}, "[fe80::1]:80", "never reachable"},
		{"allowPrivate mapped link-local", guard{allowPrivate: true}, "[::ffff:169.254.10.10]:80", "never reachable"},
		{"allowPrivate NAT64 metadata", guard{allowPrivate: true}, "[64:ff9b::a9fe:a9fe]:80", "metadata"},
		{"allowPrivate IMDS v6", guard{allowPrivate: true}, "[fd00:ec2::254]:80", "metadata"},
		{"prefix never admits link-local", guard{allow: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}}, "169.254.1.1:80", "never reachable"},
		{"blocked translated", guard{allowPrivate: true, blocked: []netip.AddrPort{runtimeAPI}}, "[::ffff:0:7f00:1]:9001", "blocked by the runner"},
		{"allowPrivate metadata", guard{allowPrivate: true}, "169.254.169.254:80", "metadata"},
		{"allowPrivate metadata v6", guard{allowPrivate: true}, "[fd00:ec2::254]:80", "metadata"},
		{"allowPrivate ECS", guard{allowPrivate: true}, "169.254.170.2:80", "metadata"},
		{"allowPrivate mapped metadata", guard{allowPrivate: true}, "[::ffff:169.254.169.254]:80", "metadata"},
		{"allowPrivate unspecified", guard{allowPrivate: true}, "0.0.0.0:80", "unspecified address"},
		{"allowPrivate multicast", guard{allowPrivate: true}, "224.0.0.1:80", "multicast address"},

		{"blocked exact", guard{allowPrivate: true, blocked: []netip.AddrPort{runtimeAPI}}, "127.0.0.1:9001", "blocked by the runner"},
		{"blocked other loopback", guard{allowPrivate: true, blocked: []netip.AddrPort{runtimeAPI}}, "127.0.0.2:9001", "blocked by the runner"},
		{"blocked ::1", guard{allowPrivate: true, blocked: []netip.AddrPort{runtimeAPI}}, "[::1]:9001", "blocked by the runner"},
		{"blocked mapped", guard{allowPrivate: true, blocked: []netip.AddrPort{runtimeAPI}}, "[::ffff:127.0.0.1]:9001", "blocked by the runner"},
		{"blocked other port", guard{allowPrivate: true, blocked: []netip.AddrPort{runtimeAPI}}, "127.0.0.1:9002", ""},
		{"blocked port elsewhere", guard{allowPrivate: true, blocked: []netip.AddrPort{runtimeAPI}}, "10.0.0.1:9001", ""},
		{"blocked despite prefix", guard{allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, blocked: []netip.AddrPort{runtimeAPI}}, "127.0.0.1:9001", "blocked by the runner"},
		{"blocked every port", guard{allowPrivate: true, blocked: []netip.AddrPort{netip.MustParseAddrPort("10.9.9.9:0")}}, "10.9.9.9:1234", "blocked by the runner"},

		{"prefix admits", guard{allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}, "10.1.2.3:443", ""},
		{"prefix admits mapped", guard{allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}, "[::ffff:10.1.2.3]:443", ""},
		{"prefix elsewhere", guard{allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}, "10.2.0.1:443", "private address"},
		{"prefix never admits metadata", guard{allow: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}}, "169.254.169.254:80", "metadata"},
		{"prefix admits reserved", guard{allow: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")}}, "198.18.0.1:80", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.guard.check(netip.MustParseAddrPort(tt.addr))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("check(%s) = %v, want allowed", tt.addr, err)
			case tt.want != "" && err == nil:
				t.Errorf("check(%s) allowed, want refusal %q", tt.addr, tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("check(%s) = %v, want %q", tt.addr, err, tt.want)
			}
		})
	}
}

func TestGuardControlRefusesNonIP(t *testing.T) {
	g := &guard{allowPrivate: true}
	var rf *refusal
	if err := g.control("tcp", "localhost:80", nil); !errors.As(err, &rf) {
		t.Errorf("control(localhost:80) = %v, want a refusal", err)
	}
	if err := g.control("tcp", "8.8.8.8:80", nil); err != nil {
		t.Errorf("control(8.8.8.8:80) = %v, want nil", err)
	}
}

func TestRuntimeAPIAddrs(t *testing.T) {
	tests := []struct {
		value   string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{"127.0.0.1:9001", []string{"127.0.0.1:9001"}, false},
		{"[::ffff:127.0.0.1]:9001", []string{"127.0.0.1:9001"}, false},
		{"127.0.0.1", nil, true},
		{"127.0.0.1:http", nil, true},
	}
	for _, tt := range tests {
		got, err := RuntimeAPIAddrs(t.Context(), tt.value)
		if (err != nil) != tt.wantErr {
			t.Errorf("RuntimeAPIAddrs(%q) error = %v, want error %v", tt.value, err, tt.wantErr)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("RuntimeAPIAddrs(%q) = %v, want %v", tt.value, got, tt.want)
			continue
		}
		for i := range got {
			if got[i].String() != tt.want[i] {
				t.Errorf("RuntimeAPIAddrs(%q)[%d] = %v, want %v", tt.value, i, got[i], tt.want[i])
			}
		}
	}
}
