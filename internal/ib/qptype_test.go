package ib_test

import (
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

func TestQPType(t *testing.T) {
	// The values of libibverbs' enum ibv_qp_type.
	for _, tc := range []struct {
		typ   ib.QPType
		value uint8
		str   string
	}{
		{ib.QPTypeRC, 2, "RC"},
		{ib.QPTypeUC, 3, "UC"},
		{ib.QPTypeUD, 4, "UD"},
		{0, 0, "QPType(0)"},
		{1, 1, "QPType(1)"},
		{5, 5, "QPType(5)"},
	} {
		if uint8(tc.typ) != tc.value {
			t.Errorf("%s = %d, want %d", tc.str, uint8(tc.typ), tc.value)
		}
		if got := tc.typ.String(); got != tc.str {
			t.Errorf("QPType(%d).String() = %q, want %q", tc.value, got, tc.str)
		}
	}
}
