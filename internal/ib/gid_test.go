package ib_test

import (
	"net/netip"
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

func TestGIDFromAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		gid  ib.GID
		str  string // inet_ntop form
		back string // what Addr returns
	}{
		{"10.77.0.2", ib.GID{10: 0xff, 11: 0xff, 12: 10, 13: 77, 14: 0, 15: 2}, "::ffff:10.77.0.2", "10.77.0.2"},
		{"::ffff:192.168.1.1", ib.GID{10: 0xff, 11: 0xff, 12: 192, 13: 168, 14: 1, 15: 1}, "::ffff:192.168.1.1", "192.168.1.1"},
		{"0.0.0.0", ib.GID{10: 0xff, 11: 0xff}, "::ffff:0.0.0.0", "0.0.0.0"},
		{"fe80::1", ib.GID{0: 0xfe, 1: 0x80, 15: 1}, "fe80::1", "fe80::1"},
		{"fe80::1%eth0", ib.GID{0: 0xfe, 1: 0x80, 15: 1}, "fe80::1", "fe80::1"},
		{"2001:db8:0:0:1:0:0:1", ib.GID{0: 0x20, 1: 0x01, 2: 0x0d, 3: 0xb8, 9: 1, 15: 1}, "2001:db8::1:0:0:1", "2001:db8::1:0:0:1"},
		{"::", ib.GID{}, "::", "::"},
	} {
		g := ib.GIDFromAddr(netip.MustParseAddr(tc.addr))
		if g != tc.gid {
			t.Errorf("GIDFromAddr(%s) = % x, want % x", tc.addr, g[:], tc.gid[:])
		}
		if got := g.String(); got != tc.str {
			t.Errorf("GIDFromAddr(%s).String() = %q, want %q", tc.addr, got, tc.str)
		}
		if got := g.Addr(); got != netip.MustParseAddr(tc.back) {
			t.Errorf("GIDFromAddr(%s).Addr() = %v, want %v", tc.addr, got, tc.back)
		}
	}
}

func TestGIDIsZero(t *testing.T) {
	if !(ib.GID{}).IsZero() {
		t.Error("zero GID: IsZero() = false")
	}
	if !ib.GIDFromAddr(netip.Addr{}).IsZero() {
		t.Error("GIDFromAddr(invalid Addr) is not the zero GID")
	}
	for _, s := range []string{"0.0.0.0", "::1", "10.0.0.1"} {
		if ib.GIDFromAddr(netip.MustParseAddr(s)).IsZero() {
			t.Errorf("GID of %s: IsZero() = true", s)
		}
	}
}
