package ib

// WCStatus is the status of a work completion (enum ibv_wc_status,
// doc/protocol.md §10.1). Data-path failures reach the user as a status, not as a
// Go error (doc/design.md §5).
type WCStatus uint8

// Work completion statuses, with their libibverbs values.
const (
	WCSuccess          WCStatus = 0  // IBV_WC_SUCCESS
	WCLocLenErr        WCStatus = 1  // IBV_WC_LOC_LEN_ERR
	WCLocQPOpErr       WCStatus = 2  // IBV_WC_LOC_QP_OP_ERR
	WCLocEECOpErr      WCStatus = 3  // IBV_WC_LOC_EEC_OP_ERR
	WCLocProtErr       WCStatus = 4  // IBV_WC_LOC_PROT_ERR
	WCWRFlushErr       WCStatus = 5  // IBV_WC_WR_FLUSH_ERR
	WCMWBindErr        WCStatus = 6  // IBV_WC_MW_BIND_ERR
	WCBadRespErr       WCStatus = 7  // IBV_WC_BAD_RESP_ERR
	WCLocAccessErr     WCStatus = 8  // IBV_WC_LOC_ACCESS_ERR
	WCRemInvReqErr     WCStatus = 9  // IBV_WC_REM_INV_REQ_ERR
	WCRemAccessErr     WCStatus = 10 // IBV_WC_REM_ACCESS_ERR
	WCRemOpErr         WCStatus = 11 // IBV_WC_REM_OP_ERR
	WCRetryExcErr      WCStatus = 12 // IBV_WC_RETRY_EXC_ERR
	WCRNRRetryExcErr   WCStatus = 13 // IBV_WC_RNR_RETRY_EXC_ERR
	WCLocRDDViolErr    WCStatus = 14 // IBV_WC_LOC_RDD_VIOL_ERR
	WCRemInvRDReqErr   WCStatus = 15 // IBV_WC_REM_INV_RD_REQ_ERR
	WCRemAbortErr      WCStatus = 16 // IBV_WC_REM_ABORT_ERR
	WCInvEECNErr       WCStatus = 17 // IBV_WC_INV_EECN_ERR
	WCInvEECStateErr   WCStatus = 18 // IBV_WC_INV_EEC_STATE_ERR
	WCFatalErr         WCStatus = 19 // IBV_WC_FATAL_ERR
	WCRespTimeoutErr   WCStatus = 20 // IBV_WC_RESP_TIMEOUT_ERR
	WCGeneralErr       WCStatus = 21 // IBV_WC_GENERAL_ERR
	WCTMErr            WCStatus = 22 // IBV_WC_TM_ERR
	WCTMRndvIncomplete WCStatus = 23 // IBV_WC_TM_RNDV_INCOMPLETE
)

// wcStatusNames are the texts rdma-core's ibv_wc_status_str prints,
// verbatim, so tools' messages match the C tools'.
var wcStatusNames = [...]string{
	WCSuccess:          "success",
	WCLocLenErr:        "local length error",
	WCLocQPOpErr:       "local QP operation error",
	WCLocEECOpErr:      "local EE context operation error",
	WCLocProtErr:       "local protection error",
	WCWRFlushErr:       "Work Request Flushed Error",
	WCMWBindErr:        "memory management operation error",
	WCBadRespErr:       "bad response error",
	WCLocAccessErr:     "local access error",
	WCRemInvReqErr:     "remote invalid request error",
	WCRemAccessErr:     "remote access error",
	WCRemOpErr:         "remote operation error",
	WCRetryExcErr:      "transport retry counter exceeded",
	WCRNRRetryExcErr:   "RNR retry counter exceeded",
	WCLocRDDViolErr:    "local RDD violation error",
	WCRemInvRDReqErr:   "remote invalid RD request",
	WCRemAbortErr:      "aborted error",
	WCInvEECNErr:       "invalid EE context number",
	WCInvEECStateErr:   "invalid EE context state",
	WCFatalErr:         "fatal error",
	WCRespTimeoutErr:   "response timeout error",
	WCGeneralErr:       "general error",
	WCTMErr:            "TM error",
	WCTMRndvIncomplete: "TM software rendezvous",
}

// String returns exactly what rdma-core's ibv_wc_status_str returns for s,
// "unknown" for a value it does not know, so messages match C tools.
func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return "unknown"
}

// WCOpcode says which operation a work completion is for (enum
// ibv_wc_opcode, doc/protocol.md §10.2). Receive completions have bit 0x80 set.
type WCOpcode uint8

// Work completion opcodes, with their libibverbs values.
const (
	WCSend            WCOpcode = 0   // IBV_WC_SEND
	WCRDMAWrite       WCOpcode = 1   // IBV_WC_RDMA_WRITE
	WCRDMARead        WCOpcode = 2   // IBV_WC_RDMA_READ
	WCCompSwap        WCOpcode = 3   // IBV_WC_COMP_SWAP
	WCFetchAdd        WCOpcode = 4   // IBV_WC_FETCH_ADD
	WCBindMW          WCOpcode = 5   // IBV_WC_BIND_MW
	WCLocalInv        WCOpcode = 6   // IBV_WC_LOCAL_INV
	WCTSO             WCOpcode = 7   // IBV_WC_TSO
	WCFlush           WCOpcode = 8   // IBV_WC_FLUSH
	WCAtomicWrite     WCOpcode = 9   // IBV_WC_ATOMIC_WRITE
	WCRecv            WCOpcode = 128 // IBV_WC_RECV
	WCRecvRDMAWithImm WCOpcode = 129 // IBV_WC_RECV_RDMA_WITH_IMM
)

var wcOpcodeNames = [...]string{
	WCSend:            "IBV_WC_SEND",
	WCRDMAWrite:       "IBV_WC_RDMA_WRITE",
	WCRDMARead:        "IBV_WC_RDMA_READ",
	WCCompSwap:        "IBV_WC_COMP_SWAP",
	WCFetchAdd:        "IBV_WC_FETCH_ADD",
	WCBindMW:          "IBV_WC_BIND_MW",
	WCLocalInv:        "IBV_WC_LOCAL_INV",
	WCTSO:             "IBV_WC_TSO",
	WCFlush:           "IBV_WC_FLUSH",
	WCAtomicWrite:     "IBV_WC_ATOMIC_WRITE",
	WCRecv:            "IBV_WC_RECV",
	WCRecvRDMAWithImm: "IBV_WC_RECV_RDMA_WITH_IMM",
}

// String returns the libibverbs enum name ("IBV_WC_SEND"), or "WCOpcode(n)".
func (o WCOpcode) String() string { return enumString(wcOpcodeNames[:], uint8(o), "WCOpcode") }

// WCFlags are the wc_flags of a work completion (enum ibv_wc_flags,
// user-space values; doc/protocol.md §10.3).
type WCFlags uint32

// Work completion flags, with their libibverbs values.
const (
	WCFlagGRH      WCFlags = 1 // IBV_WC_GRH: the receive buffer starts with the 40-byte network header
	WCFlagWithImm  WCFlags = 2 // IBV_WC_WITH_IMM: imm_data is valid
	WCFlagIPCsumOK WCFlags = 4 // IBV_WC_IP_CSUM_OK
	WCFlagWithInv  WCFlags = 8 // IBV_WC_WITH_INV: invalidated_rkey is valid
)

var wcFlagNames = []flagName{
	{uint32(WCFlagGRH), "GRH"},
	{uint32(WCFlagWithImm), "WITH_IMM"},
	{uint32(WCFlagIPCsumOK), "IP_CSUM_OK"},
	{uint32(WCFlagWithInv), "WITH_INV"},
}

// String returns the flags as "GRH|WITH_IMM" (IBV_WC_ prefix dropped),
// unnamed bits as hex, and "0" for none.
func (f WCFlags) String() string { return formatFlags(uint32(f), wcFlagNames) }
