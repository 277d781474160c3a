package wire

import (
	"testing"
	"time"
)

func TestSyndromeEncoding(t *testing.T) {
	for _, tc := range []struct {
		s     Syndrome
		raw   uint8
		typ   SyndromeType
		value uint8
	}{
		{ACKSyndrome(CreditsUnlimited), 0x1f, SyndromeACK, 0x1f},
		{ACKSyndrome(0), 0x00, SyndromeACK, 0},
		{RNRNAKSyndrome(12), 0x2c, SyndromeRNRNAK, 12},
		{RNRNAKSyndrome(0), 0x20, SyndromeRNRNAK, 0},
		{NAKSyndrome(NAKPSNSequenceError), 0x60, SyndromeNAK, 0},
		{NAKSyndrome(NAKInvalidRequest), 0x61, SyndromeNAK, 1},
		{NAKSyndrome(NAKRemoteAccess), 0x62, SyndromeNAK, 2},
		{NAKSyndrome(NAKRemoteOperation), 0x63, SyndromeNAK, 3},
		{NAKSyndrome(NAKInvalidRDRequest), 0x64, SyndromeNAK, 4},
		{Syndrome(0x45), 0x45, SyndromeReserved, 5},
	} {
		if uint8(tc.s) != tc.raw || tc.s.Type() != tc.typ || tc.s.Value() != tc.value {
			t.Errorf("syndrome %#02x: type %d value %d, want %#02x type %d value %d",
				uint8(tc.s), tc.s.Type(), tc.s.Value(), tc.raw, tc.typ, tc.value)
		}
	}
	if got := Syndrome(0x2c).RNRTimer(); got != 12 {
		t.Errorf("RNRTimer = %d", got)
	}
	if got := Syndrome(0x62).NAKCode(); got != NAKRemoteAccess || got.String() != "remote access error" {
		t.Errorf("NAKCode = %v", got)
	}
	if got := NAKCode(9).String(); got != "reserved NAK code" {
		t.Errorf("reserved code String = %q", got)
	}
}

func TestCreditCodes(t *testing.T) {
	// IBA 9.7.7.2.4, table 44 (doc/protocol.md §7.1).
	want := map[CreditCode]int{0: 0, 1: 1, 4: 4, 5: 6, 7: 12, 0x0e: 128, 0x0f: 192, 0x10: 256, 0x15: 1536, 0x1e: 32768}
	for c, n := range want {
		if got, ok := ACKSyndrome(c).CreditCode().Credits(); !ok || got != n {
			t.Errorf("credit code %#x = %d, %v; want %d", c, got, ok, n)
		}
	}
	if _, ok := CreditsUnlimited.Credits(); ok {
		t.Error("0x1f reported as limited")
	}
	prev := -1
	for c := CreditCode(0); c < CreditsUnlimited; c++ {
		n, _ := c.Credits()
		if n <= prev {
			t.Errorf("credit table not increasing at %#x", c)
		}
		prev = n
	}
}

func TestRNRTimerTable(t *testing.T) {
	// IBA 9.7.5.2.8, table 45 (doc/protocol.md §8.2), in microseconds.
	want := map[RNRTimer]time.Duration{0: 655360, 1: 10, 2: 20, 5: 60, 12: 640, 14: 1280, 18: 5120, 25: 61440, 31: 491520}
	for code, us := range want {
		if got := code.Duration(); got != us*time.Microsecond {
			t.Errorf("RNR code %d = %v, want %v", code, got, us*time.Microsecond)
		}
	}
	for code := RNRTimer(2); code < 32; code++ {
		if code.Duration() <= (code - 1).Duration() {
			t.Errorf("RNR table not increasing at %d", code)
		}
	}
	if RNRTimer(32+12).Duration() != RNRTimer(12).Duration() {
		t.Error("RNR code beyond 5 bits not masked")
	}
}
