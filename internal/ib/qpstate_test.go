package ib_test

import (
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

func TestQPState(t *testing.T) {
	// enum ibv_qp_state (doc/protocol.md §11.1).
	for _, tc := range []struct {
		state ib.QPState
		value uint8
		str   string
	}{
		{ib.QPStateReset, 0, "RESET"},
		{ib.QPStateInit, 1, "INIT"},
		{ib.QPStateRTR, 2, "RTR"},
		{ib.QPStateRTS, 3, "RTS"},
		{ib.QPStateSQD, 4, "SQD"},
		{ib.QPStateSQE, 5, "SQE"},
		{ib.QPStateErr, 6, "ERR"},
		{7, 7, "QPState(7)"},
		{255, 255, "QPState(255)"},
	} {
		if uint8(tc.state) != tc.value {
			t.Errorf("%s = %d, want %d", tc.str, uint8(tc.state), tc.value)
		}
		if got := tc.state.String(); got != tc.str {
			t.Errorf("QPState(%d).String() = %q, want %q", tc.value, got, tc.str)
		}
	}
}
