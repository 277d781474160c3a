package ib_test

import (
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

func TestWROpcode(t *testing.T) {
	// enum ibv_wr_opcode (doc/protocol.md §10.5).
	for _, tc := range []struct {
		op    ib.WROpcode
		value uint8
		str   string
	}{
		{ib.WRRDMAWrite, 0, "IBV_WR_RDMA_WRITE"},
		{ib.WRRDMAWriteWithImm, 1, "IBV_WR_RDMA_WRITE_WITH_IMM"},
		{ib.WRSend, 2, "IBV_WR_SEND"},
		{ib.WRSendWithImm, 3, "IBV_WR_SEND_WITH_IMM"},
		{ib.WRRDMARead, 4, "IBV_WR_RDMA_READ"},
		{ib.WRAtomicCmpAndSwp, 5, "IBV_WR_ATOMIC_CMP_AND_SWP"},
		{ib.WRAtomicFetchAndAdd, 6, "IBV_WR_ATOMIC_FETCH_AND_ADD"},
		{ib.WRLocalInv, 7, "IBV_WR_LOCAL_INV"},
		{ib.WRBindMW, 8, "IBV_WR_BIND_MW"},
		{ib.WRSendWithInv, 9, "IBV_WR_SEND_WITH_INV"},
		{10, 10, "WROpcode(10)"}, // IBV_WR_TSO is not ours
		{255, 255, "WROpcode(255)"},
	} {
		if uint8(tc.op) != tc.value {
			t.Errorf("%s = %d, want %d", tc.str, uint8(tc.op), tc.value)
		}
		if got := tc.op.String(); got != tc.str {
			t.Errorf("WROpcode(%d).String() = %q, want %q", tc.value, got, tc.str)
		}
	}
}

func TestSendFlags(t *testing.T) {
	// enum ibv_send_flags (doc/protocol.md §10.5).
	for _, tc := range []struct {
		flags ib.SendFlags
		value uint32
		str   string
	}{
		{ib.SendFence, 1, "FENCE"},
		{ib.SendSignaled, 2, "SIGNALED"},
		{ib.SendSolicited, 4, "SOLICITED"},
		{ib.SendInline, 8, "INLINE"},
		{ib.SendIPCsum, 16, "IP_CSUM"},
		{0, 0, "0"},
		{ib.SendInline | ib.SendSignaled, 10, "SIGNALED|INLINE"},
		{0x1f, 0x1f, "FENCE|SIGNALED|SOLICITED|INLINE|IP_CSUM"},
		{ib.SendSignaled | 0x40, 0x42, "SIGNALED|0x40"},
	} {
		if uint32(tc.flags) != tc.value {
			t.Errorf("%s = %#x, want %#x", tc.str, uint32(tc.flags), tc.value)
		}
		if got := tc.flags.String(); got != tc.str {
			t.Errorf("SendFlags(%#x).String() = %q, want %q", tc.value, got, tc.str)
		}
	}
}
