package ib_test

import (
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
)

func TestLocalACKTimeout(t *testing.T) {
	for _, tc := range []struct {
		t    uint8
		want time.Duration
		ok   bool
	}{
		{0, 0, true}, // disabled
		{1, 8192 * time.Nanosecond, true},
		{8, 1048576 * time.Nanosecond, true},
		{14, 67108864 * time.Nanosecond, true}, // ≈67 ms, the common choice
		{31, 4096 << 31 * time.Nanosecond, true},
		{32, 0, false},
	} {
		got, ok := ib.LocalACKTimeout(tc.t)
		if got != tc.want || ok != tc.ok {
			t.Errorf("LocalACKTimeout(%d) = %v, %v; want %v, %v", tc.t, got, ok, tc.want, tc.ok)
		}
	}
}
