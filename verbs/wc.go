package verbs

// WC is a work completion (struct ibv_wc), returned by CQ.Poll.
//
// For a successful completion every field is valid. For a failed one
// WRID, Status, QPNum and Opcode are: libibverbs leaves the opcode of a
// failed completion undefined, and this device reports, as rxe does, the
// opcode of the work request that failed: the send operation for the send
// queue, WCRecv for the receive queue.
type WC struct {
	// WRID is the WRID of the work request that completed.
	WRID uint64
	// Status is WCSuccess or why the request failed.
	Status WCStatus
	// Opcode is the operation that completed.
	Opcode WCOpcode
	// VendorErr is a device-specific error code; always 0 here.
	VendorErr uint32
	// ByteLen is the number of bytes received (receive completions),
	// transferred (RDMA READ and atomics) or sent (SEND and RDMA WRITE,
	// the message's length, as rxe reports it).
	ByteLen uint32
	// Imm holds the immediate data when Flags has WCFlagWithImm, in host
	// order, or the rkey a WRSendWithInv invalidated when Flags has
	// WCFlagWithInv: ibv_wc's union of imm_data and invalidated_rkey
	// (InvalidatedRKey reads it so).
	Imm uint32
	// QPNum is the number of the QP the request was posted to.
	QPNum QPN
	// SrcQP is the sender's QP number (receive completions).
	SrcQP QPN
	// Flags say which optional fields are valid.
	Flags WCFlags
}

// InvalidatedRKey returns the rkey the peer's WRSendWithInv invalidated
// before this receive completed (ibv_wc.invalidated_rkey), or 0 when Flags
// lacks WCFlagWithInv.
func (wc *WC) InvalidatedRKey() RKey {
	if wc.Flags&WCFlagWithInv == 0 {
		return 0
	}
	return RKey(wc.Imm)
}
