package ib_test

import (
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

// TestWCStatus checks every status value against enum ibv_wc_status and its
// text against what libibverbs' ibv_wc_status_str prints (rdma-core 44,
// the lab's version), verbatim.
func TestWCStatus(t *testing.T) {
	for _, tc := range []struct {
		status ib.WCStatus
		value  uint8
		str    string
	}{
		{ib.WCSuccess, 0, "success"},
		{ib.WCLocLenErr, 1, "local length error"},
		{ib.WCLocQPOpErr, 2, "local QP operation error"},
		{ib.WCLocEECOpErr, 3, "local EE context operation error"},
		{ib.WCLocProtErr, 4, "local protection error"},
		{ib.WCWRFlushErr, 5, "Work Request Flushed Error"},
		{ib.WCMWBindErr, 6, "memory management operation error"},
		{ib.WCBadRespErr, 7, "bad response error"},
		{ib.WCLocAccessErr, 8, "local access error"},
		{ib.WCRemInvReqErr, 9, "remote invalid request error"},
		{ib.WCRemAccessErr, 10, "remote access error"},
		{ib.WCRemOpErr, 11, "remote operation error"},
		{ib.WCRetryExcErr, 12, "transport retry counter exceeded"},
		{ib.WCRNRRetryExcErr, 13, "RNR retry counter exceeded"},
		{ib.WCLocRDDViolErr, 14, "local RDD violation error"},
		{ib.WCRemInvRDReqErr, 15, "remote invalid RD request"},
		{ib.WCRemAbortErr, 16, "aborted error"},
		{ib.WCInvEECNErr, 17, "invalid EE context number"},
		{ib.WCInvEECStateErr, 18, "invalid EE context state"},
		{ib.WCFatalErr, 19, "fatal error"},
		{ib.WCRespTimeoutErr, 20, "response timeout error"},
		{ib.WCGeneralErr, 21, "general error"},
		{ib.WCTMErr, 22, "TM error"},
		{ib.WCTMRndvIncomplete, 23, "TM software rendezvous"},
		{24, 24, "unknown"},
		{255, 255, "unknown"},
	} {
		if uint8(tc.status) != tc.value {
			t.Errorf("status %q = %d, want %d", tc.str, uint8(tc.status), tc.value)
		}
		if got := tc.status.String(); got != tc.str {
			t.Errorf("WCStatus(%d).String() = %q, want %q", tc.value, got, tc.str)
		}
	}
}

func TestWCOpcode(t *testing.T) {
	// enum ibv_wc_opcode (doc/protocol.md §10.2).
	for _, tc := range []struct {
		op    ib.WCOpcode
		value uint8
		str   string
	}{
		{ib.WCSend, 0, "IBV_WC_SEND"},
		{ib.WCRDMAWrite, 1, "IBV_WC_RDMA_WRITE"},
		{ib.WCRDMARead, 2, "IBV_WC_RDMA_READ"},
		{ib.WCCompSwap, 3, "IBV_WC_COMP_SWAP"},
		{ib.WCFetchAdd, 4, "IBV_WC_FETCH_ADD"},
		{ib.WCBindMW, 5, "IBV_WC_BIND_MW"},
		{ib.WCLocalInv, 6, "IBV_WC_LOCAL_INV"},
		{ib.WCTSO, 7, "IBV_WC_TSO"},
		{ib.WCFlush, 8, "IBV_WC_FLUSH"},
		{ib.WCAtomicWrite, 9, "IBV_WC_ATOMIC_WRITE"},
		{ib.WCRecv, 128, "IBV_WC_RECV"},
		{ib.WCRecvRDMAWithImm, 129, "IBV_WC_RECV_RDMA_WITH_IMM"},
		{10, 10, "WCOpcode(10)"},
		{127, 127, "WCOpcode(127)"},
		{130, 130, "WCOpcode(130)"},
		{255, 255, "WCOpcode(255)"},
	} {
		if uint8(tc.op) != tc.value {
			t.Errorf("%s = %d, want %d", tc.str, uint8(tc.op), tc.value)
		}
		if got := tc.op.String(); got != tc.str {
			t.Errorf("WCOpcode(%d).String() = %q, want %q", tc.value, got, tc.str)
		}
	}
}

func TestWCFlags(t *testing.T) {
	// enum ibv_wc_flags, user-space values (doc/protocol.md §10.3).
	for _, tc := range []struct {
		flags ib.WCFlags
		value uint32
		str   string
	}{
		{ib.WCFlagGRH, 1, "GRH"},
		{ib.WCFlagWithImm, 2, "WITH_IMM"},
		{ib.WCFlagIPCsumOK, 4, "IP_CSUM_OK"},
		{ib.WCFlagWithInv, 8, "WITH_INV"},
		{0, 0, "0"},
		{ib.WCFlagGRH | ib.WCFlagWithImm, 3, "GRH|WITH_IMM"},
		{ib.WCFlagWithInv | ib.WCFlagGRH | 0x30, 0x39, "GRH|WITH_INV|0x30"},
	} {
		if uint32(tc.flags) != tc.value {
			t.Errorf("%s = %#x, want %#x", tc.str, uint32(tc.flags), tc.value)
		}
		if got := tc.flags.String(); got != tc.str {
			t.Errorf("WCFlags(%#x).String() = %q, want %q", tc.value, got, tc.str)
		}
	}
}
