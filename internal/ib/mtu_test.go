package ib_test

import (
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

func TestMTU(t *testing.T) {
	// enum ibv_mtu (doc/protocol.md §5.1).
	for _, tc := range []struct {
		mtu   ib.MTU
		value uint8
		bytes int
		str   string
	}{
		{ib.MTU256, 1, 256, "256"},
		{ib.MTU512, 2, 512, "512"},
		{ib.MTU1024, 3, 1024, "1024"},
		{ib.MTU2048, 4, 2048, "2048"},
		{ib.MTU4096, 5, 4096, "4096"},
		{0, 0, 0, "MTU(0)"},
		{6, 6, 0, "MTU(6)"},
		{255, 255, 0, "MTU(255)"},
	} {
		if uint8(tc.mtu) != tc.value {
			t.Errorf("MTU %s = %d, want %d", tc.str, uint8(tc.mtu), tc.value)
		}
		if got := tc.mtu.Bytes(); got != tc.bytes {
			t.Errorf("MTU(%d).Bytes() = %d, want %d", tc.value, got, tc.bytes)
		}
		if got := tc.mtu.String(); got != tc.str {
			t.Errorf("MTU(%d).String() = %q, want %q", tc.value, got, tc.str)
		}
		m, ok := ib.MTUFromBytes(tc.bytes)
		if wantOK := tc.bytes != 0; ok != wantOK || (ok && m != tc.mtu) {
			t.Errorf("MTUFromBytes(%d) = %v, %v; want %v, %v", tc.bytes, m, ok, tc.mtu, wantOK)
		}
	}
}

func TestMTUFromBytesRejects(t *testing.T) {
	for _, n := range []int{-256, 0, 1, 255, 257, 1000, 1500, 4095, 8192, 9000} {
		if m, ok := ib.MTUFromBytes(n); ok {
			t.Errorf("MTUFromBytes(%d) = %v, true; want false", n, m)
		}
	}
}

func TestActiveMTU(t *testing.T) {
	// rxe: link MTU − 80, rounded down, at least 256 (doc/protocol.md §5.1).
	for _, tc := range []struct {
		link int
		want ib.MTU
	}{
		{1500, ib.MTU1024},
		{9000, ib.MTU4096},
		{4200, ib.MTU4096},
		{2200, ib.MTU2048},
		{65536, ib.MTU4096},
		{4176, ib.MTU4096}, // 4096 + 80
		{4175, ib.MTU2048},
		{2128, ib.MTU2048},
		{2127, ib.MTU1024},
		{1104, ib.MTU1024},
		{1103, ib.MTU512},
		{592, ib.MTU512},
		{591, ib.MTU256},
		{336, ib.MTU256},
		{100, ib.MTU256}, // below 256 after the headers
		{0, ib.MTU256},
		{-1, ib.MTU256},
	} {
		if got := ib.ActiveMTU(tc.link); got != tc.want {
			t.Errorf("ActiveMTU(%d) = %v, want %v", tc.link, got, tc.want)
		}
	}
}
