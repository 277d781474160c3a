package verbs

// SGE is a scatter/gather element (struct ibv_sge): Length bytes at
// virtual address Addr of the memory region whose local key is LKey.
// MR.SGE builds one inside a region.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   LKey
}

// SendWR is a send work request (struct ibv_send_wr), posted with
// QP.PostSend. The QP copies it when it is posted, so the struct may be
// reused at once; the memory its SGEs name must stay untouched until the
// request completes, unless Flags has SendInline.
type SendWR struct {
	// WRID is returned in the work completion (WC.WRID).
	WRID uint64
	// Next chains requests posted in one call; nil ends the chain.
	Next *SendWR
	// SGList gathers the message from local memory, at most
	// QPCap.MaxSendSGE elements; RDMA READ and atomics scatter the
	// response into it.
	SGList []SGE
	// Opcode is the operation.
	Opcode WROpcode
	// Flags are SendSignaled, SendFence, SendSolicited, SendInline.
	Flags SendFlags
	// Imm is the immediate data of WRSendWithImm and WRRDMAWriteWithImm,
	// in host order (ibv_send_wr.imm_data is big-endian; here it is a
	// number, and travels big-endian on the wire).
	Imm uint32
	// InvalidateRKey is the rkey WRSendWithInv invalidates at the peer
	// (a type 2 window the peer bound through the QP this one is
	// connected to) and WRLocalInv invalidates here (a type 2 window of
	// the QP's PD) (ibv_send_wr.invalidate_rkey).
	InvalidateRKey RKey
	// RemoteAddr and RKey address the target of RDMA and atomic
	// operations (wr.rdma and wr.atomic): a peer's MR.Addr (plus an
	// offset) and MR.RKey. Atomics need an 8-byte aligned RemoteAddr.
	RemoteAddr uint64
	RKey       RKey
	// CompareAdd is the compare value of WRAtomicCmpAndSwp or the addend
	// of WRAtomicFetchAndAdd; Swap is the swap value. The original value
	// at RemoteAddr lands in the 8 bytes of SGList.
	CompareAdd, Swap uint64
	// AH, RemoteQPN and RemoteQKey address a send on a UD QP (wr.ud): an
	// address handle of the QP's PD, the destination QP's number and the
	// Q_Key it expects. A RemoteQKey with the high bit set sends the QP's
	// own QPAttr.QKey instead (a privileged Q_Key). Other QP types
	// ignore them.
	AH         *AH
	RemoteQPN  QPN
	RemoteQKey uint32
	// BindMW is the bind of WRBindMW (ibv_send_wr.bind_mw).
	BindMW BindMW
}

// RecvWR is a receive work request (struct ibv_recv_wr), posted with
// QP.PostRecv. An incoming SEND, or RDMA WRITE with immediate, consumes
// one in order and scatters its payload into SGList.
type RecvWR struct {
	// WRID is returned in the work completion (WC.WRID).
	WRID uint64
	// Next chains requests posted in one call; nil ends the chain.
	Next *RecvWR
	// SGList scatters the message, at most QPCap.MaxRecvSGE elements; a
	// message longer than their total fails with WCLocLenErr.
	SGList []SGE
}
