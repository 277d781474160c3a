package engine

import (
	"fmt"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
)

// SGE is a scatter/gather element: Length bytes at virtual address Addr in
// the memory region with key LKey (struct ibv_sge).
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   ib.LKey
}

// SendWR is a send work request (struct ibv_send_wr). Next chains requests
// posted in one call.
type SendWR struct {
	WRID   uint64
	Next   *SendWR
	SGList []SGE
	Opcode ib.WROpcode
	Flags  ib.SendFlags
	// Imm is the immediate data of *_WITH_IMM, in host order; it travels
	// big-endian in the ImmDt header.
	Imm uint32
	// InvalidateRKey is the key SEND_WITH_INV invalidates at the
	// responder, or LOCAL_INV here (ibv_send_wr.invalidate_rkey).
	InvalidateRKey ib.RKey
	// RemoteAddr and RKey address the target of RDMA and atomic operations.
	RemoteAddr uint64
	RKey       ib.RKey
	// CompareAdd is the compare value (CMP_AND_SWP) or the addend
	// (FETCH_AND_ADD); Swap is the swap value.
	CompareAdd, Swap uint64
	// AH, RemoteQPN and RemoteQKey address a UD send (wr.ud): the
	// destination's address handle, QP number and Q_Key. AH points at an
	// object whose first word is the handle, as BindMW's pointers do: the
	// verbs AH begins so.
	AH         **AH
	RemoteQPN  ib.QPN
	RemoteQKey uint32
	// BindMW is the bind of BIND_MW.
	BindMW BindMW
}

// BindMW is the bind_mw part of a send work request: the window, the key
// it gets, and what it is bound to. MW and BindInfo.MR point at objects
// whose first word is the window or region: the verbs MW and MR begin so
// (verbs/convert_unsafe.go).
type BindMW struct {
	MW       **mem.Window
	RKey     ib.RKey
	BindInfo MWBindInfo
}

// MWBindInfo is what a window is bound to (struct ibv_mw_bind_info).
type MWBindInfo struct {
	MR            **mem.Region
	Addr          uint64
	Length        uint64
	MWAccessFlags ib.AccessFlags
}

// RecvWR is a receive work request (struct ibv_recv_wr).
type RecvWR struct {
	WRID   uint64
	Next   *RecvWR
	SGList []SGE
}

// WC is a work completion (struct ibv_wc). For a failed completion only
// WRID, Status, QPNum and VendorErr are meaningful.
type WC struct {
	WRID      uint64
	Status    ib.WCStatus
	Opcode    ib.WCOpcode
	VendorErr uint32
	ByteLen   uint32
	// Imm holds the immediate data (Flags has WCFlagWithImm), in host order.
	Imm   uint32
	QPNum ib.QPN
	SrcQP ib.QPN
	Flags ib.WCFlags
}

// QPCap are a QP's queue capacities (struct ibv_qp_cap).
type QPCap struct {
	MaxSendWR, MaxRecvWR   uint32
	MaxSendSGE, MaxRecvSGE uint32
	MaxInlineData          uint32
}

// check returns ErrBadCapability naming the first capacity out of range:
// the work request counts have no default, the SGE counts default to 1.
func (c *QPCap) check() error {
	for _, f := range [...]struct {
		name    string
		v, l, h uint32
	}{
		{"MaxSendWR", c.MaxSendWR, 1, MaxQPWR}, {"MaxRecvWR", c.MaxRecvWR, 1, MaxQPWR},
		{"MaxSendSGE", c.MaxSendSGE, 0, MaxSGE}, {"MaxRecvSGE", c.MaxRecvSGE, 0, MaxSGE},
		{"MaxInlineData", c.MaxInlineData, 0, MaxInlineData},
	} {
		if f.v < f.l || f.v > f.h {
			return fmt.Errorf("%w: %s %d, must be %d to %d", ErrBadCapability, f.name, f.v, f.l, f.h)
		}
	}
	return nil
}

// QPInitAttr describes a QP to create (struct ibv_qp_init_attr).
type QPInitAttr struct {
	Type           ib.QPType
	SendCQ, RecvCQ *CQ
	Cap            QPCap
	// SQSigAll makes every send WR generate a completion.
	SQSigAll bool
	// SRQ, if set, supplies the receive WQEs (Cap's receive sizes are
	// then ignored).
	SRQ *SRQ
}

// AHAttr is an address vector (struct ibv_ah_attr with its GRH). On RoCE
// IsGlobal must be set and DGID is the peer's IP address.
type AHAttr struct {
	DGID         ib.GID
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	IsGlobal     bool
	SL           uint8
	PortNum      uint8
	// DestPort is a goverbs extension: the peer's UDP port, 0 meaning the
	// RoCEv2 port 4791. It lets several devices share one host in tests.
	DestPort uint16
}

// QPAttr holds the attributes of modify and query (struct ibv_qp_attr).
type QPAttr struct {
	State, CurState ib.QPState
	PathMTU         ib.MTU
	QKey            uint32
	RQPSN, SQPSN    uint32
	DestQPN         ib.QPN
	AccessFlags     ib.AccessFlags
	Cap             QPCap
	AH              AHAttr
	PKeyIndex       uint16
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8
	PortNum         uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8
	// EnSQDAsyncNotify, with ib.QPAttrEnSQDAsyncNotify at RTS → SQD,
	// asks for EventSQDrained once the send queue has drained.
	EnSQDAsyncNotify bool
	// SQDraining, from Query only, is set in SQD while messages the
	// send queue started are still outstanding.
	SQDraining bool
}
