package ib

// WROpcode is the operation of a send work request (enum ibv_wr_opcode,
// doc/protocol.md §10.5). Which opcodes a QP type accepts, and the wire opcodes
// each produces, are in that table.
type WROpcode uint8

// Send work request opcodes, with their libibverbs values.
const (
	WRRDMAWrite         WROpcode = 0 // IBV_WR_RDMA_WRITE
	WRRDMAWriteWithImm  WROpcode = 1 // IBV_WR_RDMA_WRITE_WITH_IMM
	WRSend              WROpcode = 2 // IBV_WR_SEND
	WRSendWithImm       WROpcode = 3 // IBV_WR_SEND_WITH_IMM
	WRRDMARead          WROpcode = 4 // IBV_WR_RDMA_READ
	WRAtomicCmpAndSwp   WROpcode = 5 // IBV_WR_ATOMIC_CMP_AND_SWP
	WRAtomicFetchAndAdd WROpcode = 6 // IBV_WR_ATOMIC_FETCH_AND_ADD
	WRLocalInv          WROpcode = 7 // IBV_WR_LOCAL_INV
	WRBindMW            WROpcode = 8 // IBV_WR_BIND_MW
	WRSendWithInv       WROpcode = 9 // IBV_WR_SEND_WITH_INV
)

var wrOpcodeNames = [...]string{
	WRRDMAWrite:         "IBV_WR_RDMA_WRITE",
	WRRDMAWriteWithImm:  "IBV_WR_RDMA_WRITE_WITH_IMM",
	WRSend:              "IBV_WR_SEND",
	WRSendWithImm:       "IBV_WR_SEND_WITH_IMM",
	WRRDMARead:          "IBV_WR_RDMA_READ",
	WRAtomicCmpAndSwp:   "IBV_WR_ATOMIC_CMP_AND_SWP",
	WRAtomicFetchAndAdd: "IBV_WR_ATOMIC_FETCH_AND_ADD",
	WRLocalInv:          "IBV_WR_LOCAL_INV",
	WRBindMW:            "IBV_WR_BIND_MW",
	WRSendWithInv:       "IBV_WR_SEND_WITH_INV",
}

// String returns the libibverbs enum name ("IBV_WR_SEND"), or "WROpcode(n)".
func (o WROpcode) String() string { return enumString(wrOpcodeNames[:], uint8(o), "WROpcode") }

// SendFlags modify a send work request (enum ibv_send_flags, doc/protocol.md
// §10.5).
type SendFlags uint32

// Send flags, with their libibverbs values.
const (
	// SendFence waits for the QP's earlier READ and atomic requests to
	// complete before this one starts (IBV_SEND_FENCE).
	SendFence SendFlags = 1
	// SendSignaled asks for a completion on success (IBV_SEND_SIGNALED).
	SendSignaled SendFlags = 2
	// SendSolicited sets BTH.SE on the last packet (IBV_SEND_SOLICITED).
	SendSolicited SendFlags = 4
	// SendInline copies the data at post time, without an lkey check
	// (IBV_SEND_INLINE).
	SendInline SendFlags = 8
	// SendIPCsum asks for checksum offload on raw and UD IPoIB QPs
	// (IBV_SEND_IP_CSUM); it has no meaning here.
	SendIPCsum SendFlags = 16
)

var sendFlagNames = []flagName{
	{uint32(SendFence), "FENCE"},
	{uint32(SendSignaled), "SIGNALED"},
	{uint32(SendSolicited), "SOLICITED"},
	{uint32(SendInline), "INLINE"},
	{uint32(SendIPCsum), "IP_CSUM"},
}

// String returns the flags as "SIGNALED|INLINE" (IBV_SEND_ prefix dropped),
// unnamed bits as hex, and "0" for none.
func (f SendFlags) String() string { return formatFlags(uint32(f), sendFlagNames) }
