package verbs

import (
	"github.com/goverbs/goverbs/internal/engine"
	"github.com/goverbs/goverbs/internal/ib"
)

// The verbs vocabulary, shared with the engine.
type (
	// AccessFlags are memory and QP access rights (enum ibv_access_flags).
	AccessFlags = ib.AccessFlags
	// MTU is an IB MTU enum value (enum ibv_mtu).
	MTU = ib.MTU
	// GID is a 16-byte global identifier; on RoCEv2 an IP address.
	GID = ib.GID
	// QPN is a queue pair number.
	QPN = ib.QPN
	// LKey is a local memory key.
	LKey = ib.LKey
	// RKey is a remote memory key.
	RKey = ib.RKey
	// WCStatus is a work completion status (enum ibv_wc_status).
	WCStatus = ib.WCStatus
	// WCOpcode is a work completion opcode (enum ibv_wc_opcode).
	WCOpcode = ib.WCOpcode
	// WCFlags are work completion flags.
	WCFlags = ib.WCFlags
	// WROpcode is a send work request opcode (enum ibv_wr_opcode).
	WROpcode = ib.WROpcode
	// SendFlags are send work request flags (enum ibv_send_flags).
	SendFlags = ib.SendFlags
	// QPType is a queue pair transport type.
	QPType = ib.QPType
	// QPState is a queue pair state.
	QPState = ib.QPState
	// QPAttrMask selects the attributes of QP.Modify (enum ibv_qp_attr_mask).
	QPAttrMask = ib.QPAttrMask

	// SGE is a scatter/gather element (struct ibv_sge).
	SGE = engine.SGE
	// SendWR is a send work request (struct ibv_send_wr).
	SendWR = engine.SendWR
	// RecvWR is a receive work request (struct ibv_recv_wr).
	RecvWR = engine.RecvWR
	// WC is a work completion (struct ibv_wc).
	WC = engine.WC
	// QPCap are queue pair capacities (struct ibv_qp_cap).
	QPCap = engine.QPCap
	// AHAttr is an address vector (struct ibv_ah_attr).
	AHAttr = engine.AHAttr
	// QPAttr are queue pair attributes (struct ibv_qp_attr).
	QPAttr = engine.QPAttr
	// Counter names one device counter.
	Counter = engine.Counter
	// Counters is a snapshot of a device's counters.
	Counters = engine.Counters
	// PostError says which work request of a chain was not posted.
	PostError = engine.PostError
)

// Access flags.
const (
	AccessLocalWrite   = ib.AccessLocalWrite
	AccessRemoteWrite  = ib.AccessRemoteWrite
	AccessRemoteRead   = ib.AccessRemoteRead
	AccessRemoteAtomic = ib.AccessRemoteAtomic
)

// MTUs.
const (
	MTU256  = ib.MTU256
	MTU512  = ib.MTU512
	MTU1024 = ib.MTU1024
	MTU2048 = ib.MTU2048
	MTU4096 = ib.MTU4096
)

// Send work request opcodes.
const (
	WRRDMAWrite         = ib.WRRDMAWrite
	WRRDMAWriteWithImm  = ib.WRRDMAWriteWithImm
	WRSend              = ib.WRSend
	WRSendWithImm       = ib.WRSendWithImm
	WRRDMARead          = ib.WRRDMARead
	WRAtomicCmpAndSwp   = ib.WRAtomicCmpAndSwp
	WRAtomicFetchAndAdd = ib.WRAtomicFetchAndAdd
)

// Send flags.
const (
	SendFence     = ib.SendFence
	SendSignaled  = ib.SendSignaled
	SendSolicited = ib.SendSolicited
	SendInline    = ib.SendInline
)

// Work completion statuses.
const (
	WCSuccess        = ib.WCSuccess
	WCLocLenErr      = ib.WCLocLenErr
	WCLocQPOpErr     = ib.WCLocQPOpErr
	WCLocProtErr     = ib.WCLocProtErr
	WCWRFlushErr     = ib.WCWRFlushErr
	WCBadRespErr     = ib.WCBadRespErr
	WCRemInvReqErr   = ib.WCRemInvReqErr
	WCRemAccessErr   = ib.WCRemAccessErr
	WCRemOpErr       = ib.WCRemOpErr
	WCRetryExcErr    = ib.WCRetryExcErr
	WCRNRRetryExcErr = ib.WCRNRRetryExcErr
)

// Work completion opcodes.
const (
	WCSend            = ib.WCSend
	WCRDMAWrite       = ib.WCRDMAWrite
	WCRDMARead        = ib.WCRDMARead
	WCCompSwap        = ib.WCCompSwap
	WCFetchAdd        = ib.WCFetchAdd
	WCRecv            = ib.WCRecv
	WCRecvRDMAWithImm = ib.WCRecvRDMAWithImm
)

// Work completion flags.
const (
	WCFlagWithImm = ib.WCFlagWithImm
)

// QP types and states.
const (
	QPTypeRC = ib.QPTypeRC

	QPStateReset = ib.QPStateReset
	QPStateInit  = ib.QPStateInit
	QPStateRTR   = ib.QPStateRTR
	QPStateRTS   = ib.QPStateRTS
	QPStateSQD   = ib.QPStateSQD
	QPStateErr   = ib.QPStateErr
)

// QP attribute mask bits.
const (
	QPAttrState           = ib.QPAttrState
	QPAttrCurState        = ib.QPAttrCurState
	QPAttrAccessFlags     = ib.QPAttrAccessFlags
	QPAttrPKeyIndex       = ib.QPAttrPKeyIndex
	QPAttrPort            = ib.QPAttrPort
	QPAttrAV              = ib.QPAttrAV
	QPAttrPathMTU         = ib.QPAttrPathMTU
	QPAttrTimeout         = ib.QPAttrTimeout
	QPAttrRetryCnt        = ib.QPAttrRetryCnt
	QPAttrRNRRetry        = ib.QPAttrRNRRetry
	QPAttrRQPSN           = ib.QPAttrRQPSN
	QPAttrMaxQPRdAtomic   = ib.QPAttrMaxQPRdAtomic
	QPAttrMinRNRTimer     = ib.QPAttrMinRNRTimer
	QPAttrSQPSN           = ib.QPAttrSQPSN
	QPAttrMaxDestRdAtomic = ib.QPAttrMaxDestRdAtomic
	QPAttrDestQPN         = ib.QPAttrDestQPN
)

// GIDFromAddr returns the RoCEv2 GID of an IP address (IPv4 addresses
// become IPv4-mapped IPv6 addresses).
var GIDFromAddr = ib.GIDFromAddr

// Device counters (see Device.Counters); the first ones are named like
// Linux rxe's hw_counters.
const (
	SentPkts            = engine.SentPkts
	RcvdPkts            = engine.RcvdPkts
	DuplicateRequest    = engine.DuplicateRequest
	OutOfSeqRequest     = engine.OutOfSeqRequest
	RcvdRNRErr          = engine.RcvdRNRErr
	SendRNRErr          = engine.SendRNRErr
	RcvdSeqErr          = engine.RcvdSeqErr
	RetryExceededErr    = engine.RetryExceededErr
	RetryRNRExceededErr = engine.RetryRNRExceededErr
	CompleterRetryErr   = engine.CompleterRetryErr
	SendErr             = engine.SendErr
	RDMASends           = engine.RDMASends
	RDMARecvs           = engine.RDMARecvs
	NumCounters         = engine.NumCounters
)

// Errors of the data path, for errors.Is: a failed post wraps one of them
// in a PostError; Poll returns ErrCQOverrun after completions were lost.
var (
	ErrQPState      = engine.ErrQPState
	ErrQueueFull    = engine.ErrQueueFull
	ErrTooManySGE   = engine.ErrTooManySGE
	ErrBadOpcode    = engine.ErrBadOpcode
	ErrMessageSize  = engine.ErrMessageSize
	ErrAtomicLength = engine.ErrAtomicLength
	ErrAtomicAlign  = engine.ErrAtomicAlign
	ErrInlineSize   = engine.ErrInlineSize
	ErrInlineOpcode = engine.ErrInlineOpcode
	ErrInlineAccess = engine.ErrInlineAccess
	ErrCQOverrun    = engine.ErrCQOverrun
)

// MTUFromBytes returns the MTU of exactly n bytes, and false when n is not
// 256, 512, 1024, 2048 or 4096.
func MTUFromBytes(n int) (MTU, bool) { return ib.MTUFromBytes(n) }
