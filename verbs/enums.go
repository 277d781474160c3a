package verbs

import (
	"fmt"
	"net/netip"

	"github.com/goverbs/goverbs/internal/ib"
)

// The identifiers and enumerations of libibverbs. Each is a type of this
// package with the libibverbs values. The engine, which cannot import this
// package, has the same types internally: the String methods are its, and
// TestConstants checks that every value below is the engine's.

// QPN is a queue pair number (ibv_qp.qp_num): 24 bits on the wire, user QPs
// numbered from a random base above the reserved 0x0–0x10, as hardware does.
type QPN uint32

// LKey is a local memory key (ibv_mr.lkey): it names the memory region of a
// scatter/gather element. It never goes on the wire, and 0 names no region.
type LKey uint32

// RKey is a remote memory key (ibv_mr.rkey): a peer puts it in RDMA and
// atomic work requests (SendWR.RKey) to name the target region.
type RKey uint32

// Format prints q as the C tools and this package's errors do, 0x and six
// hex digits, for %v, %s and %q (quoted), with their width and flags —
// and so for fmt.Print and Println, which print a QPN in hex where a
// plain uint32 is decimal; other verbs (%d, %x, %#x, %#v...) format the
// number as for a uint32.
func (q QPN) Format(f fmt.State, verb rune) { formatHex(f, verb, uint32(q), 6) }

// Format prints k as 0x and eight hex digits for %v, %s and %q, as
// QPN.Format.
func (k LKey) Format(f fmt.State, verb rune) { formatHex(f, verb, uint32(k), 8) }

// Format prints k as 0x and eight hex digits for %v, %s and %q, as
// QPN.Format.
func (k RKey) Format(f fmt.State, verb rune) { formatHex(f, verb, uint32(k), 8) }

// formatHex is the Format of QPN and the keys: v as 0x and digits hex
// digits, as text, for %v (but %#v), %s and %q, and as a plain number for
// any other verb. (A String method would do for %v, but fmt would take it
// for %x too and print the hex of its text.)
func formatHex(f fmt.State, verb rune, v uint32, digits int) {
	switch {
	case verb == 'v' && f.Flag('#'), verb != 'v' && verb != 's' && verb != 'q':
		fmt.Fprintf(f, fmt.FormatString(f, verb), v)
	default:
		fmt.Fprintf(f, fmt.FormatString(f, verb), fmt.Sprintf("0x%0*x", digits, v))
	}
}

// GID is a 16-byte global identifier (union ibv_gid). On RoCEv2 a GID is an
// IP address: IPv6 as is, IPv4 a.b.c.d as the IPv4-mapped ::ffff:a.b.c.d.
type GID [16]byte

// GIDFromAddr returns the RoCEv2 GID of an IP address (IPv4 addresses
// become IPv4-mapped IPv6 addresses; the zero Addr gives the zero GID).
func GIDFromAddr(a netip.Addr) GID { return GID(ib.GIDFromAddr(a)) }

// Addr returns the IP address g stands for: IPv4 for an IPv4-mapped GID.
func (g GID) Addr() netip.Addr { return ib.GID(g).Addr() }

// String returns g as inet_ntop writes an IPv6 address, IPv4-mapped GIDs
// in mixed notation ("::ffff:10.0.0.2").
func (g GID) String() string { return ib.GID(g).String() }

// IsZero reports whether g is all zeros, the unset GID.
func (g GID) IsZero() bool { return g == GID{} }

// ParseGID reads a GID written as an IP address: String's form, or an
// IPv4 address, which stands for its IPv4-mapped GID. An address with a
// zone (fe80::1%eth0) is refused: a GID has none.
func ParseGID(s string) (GID, error) {
	g, err := parseGID(s)
	if err != nil {
		return GID{}, errorf("parse GID", "%w: %w", ErrInvalidArgument, err)
	}
	return g, nil
}

// parseGID is ParseGID with the bare reason of a failure.
func parseGID(s string) (GID, error) {
	a, err := netip.ParseAddr(s)
	if err == nil && a.Zone() != "" {
		err = fmt.Errorf("%q has a zone, a GID none", s)
	}
	if err != nil {
		return GID{}, err
	}
	return GIDFromAddr(a), nil
}

// MarshalText returns g.String(), so that a GID travels as text in JSON
// and the like (a [16]byte would be 16 numbers).
func (g GID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText sets g from text ParseGID reads.
func (g *GID) UnmarshalText(text []byte) error {
	p, err := ParseGID(string(text))
	if err != nil {
		return err
	}
	*g = p
	return nil
}

// MTU is an IB path MTU (enum ibv_mtu): the most payload bytes one packet
// carries. PortAttr.ActiveMTU is the largest a path may use.
type MTU uint8

// MTU values (IBV_MTU_256 … IBV_MTU_4096).
const (
	MTU256  MTU = 1 // IBV_MTU_256
	MTU512  MTU = 2 // IBV_MTU_512
	MTU1024 MTU = 3 // IBV_MTU_1024
	MTU2048 MTU = 4 // IBV_MTU_2048
	MTU4096 MTU = 5 // IBV_MTU_4096
)

// Bytes returns the payload size m stands for (MTU1024 → 1024), or 0 for a
// value that is not an MTU.
func (m MTU) Bytes() int { return ib.MTU(m).Bytes() }

// String returns the size in bytes ("1024"), or "MTU(n)" for an invalid m.
func (m MTU) String() string { return ib.MTU(m).String() }

// MTUFromBytes returns the MTU of exactly n bytes, and false when n is not
// 256, 512, 1024, 2048 or 4096.
func MTUFromBytes(n int) (MTU, bool) {
	m, ok := ib.MTUFromBytes(n)
	return MTU(m), ok
}

// AccessFlags are the access rights of a memory region (PD.RegMR) or of a
// QP's responder (QPAttr.AccessFlags) (enum ibv_access_flags). Local read
// is always allowed and has no flag.
type AccessFlags uint32

// Access flags. A memory region honours the first five; REMOTE_WRITE and
// REMOTE_ATOMIC need LOCAL_WRITE too; MW_BIND lets memory windows be bound
// to it. RegMR refuses ZERO_BASED, ON_DEMAND and HUGETLB (not implemented)
// and ignores RELAXED_ORDERING. A window (MWBindInfo) has the remote
// three.
const (
	AccessLocalWrite      AccessFlags = 0x1      // IBV_ACCESS_LOCAL_WRITE
	AccessRemoteWrite     AccessFlags = 0x2      // IBV_ACCESS_REMOTE_WRITE
	AccessRemoteRead      AccessFlags = 0x4      // IBV_ACCESS_REMOTE_READ
	AccessRemoteAtomic    AccessFlags = 0x8      // IBV_ACCESS_REMOTE_ATOMIC
	AccessMWBind          AccessFlags = 0x10     // IBV_ACCESS_MW_BIND
	AccessZeroBased       AccessFlags = 0x20     // IBV_ACCESS_ZERO_BASED
	AccessOnDemand        AccessFlags = 0x40     // IBV_ACCESS_ON_DEMAND
	AccessHugeTLB         AccessFlags = 0x80     // IBV_ACCESS_HUGETLB
	AccessRelaxedOrdering AccessFlags = 0x100000 // IBV_ACCESS_RELAXED_ORDERING
)

// String returns the flags as "LOCAL_WRITE|REMOTE_READ" (IBV_ACCESS_
// prefix dropped), unnamed bits in hex, "0" for none.
func (a AccessFlags) String() string { return ib.AccessFlags(a).String() }

// WROpcode is the operation of a send work request (enum ibv_wr_opcode).
type WROpcode uint8

// Send work request opcodes. An RC QP accepts them all.
const (
	WRRDMAWrite         WROpcode = 0 // IBV_WR_RDMA_WRITE
	WRRDMAWriteWithImm  WROpcode = 1 // IBV_WR_RDMA_WRITE_WITH_IMM
	WRSend              WROpcode = 2 // IBV_WR_SEND
	WRSendWithImm       WROpcode = 3 // IBV_WR_SEND_WITH_IMM
	WRRDMARead          WROpcode = 4 // IBV_WR_RDMA_READ
	WRAtomicCmpAndSwp   WROpcode = 5 // IBV_WR_ATOMIC_CMP_AND_SWP
	WRAtomicFetchAndAdd WROpcode = 6 // IBV_WR_ATOMIC_FETCH_AND_ADD
	WRLocalInv          WROpcode = 7 // IBV_WR_LOCAL_INV: invalidates a type 2 window here (SendWR.InvalidateRKey)
	WRBindMW            WROpcode = 8 // IBV_WR_BIND_MW: binds a window (SendWR.BindMW)
	WRSendWithInv       WROpcode = 9 // IBV_WR_SEND_WITH_INV: a SEND that invalidates a window at the peer
)

// String returns the libibverbs name ("IBV_WR_SEND"), or "WROpcode(n)".
func (o WROpcode) String() string { return ib.WROpcode(o).String() }

// SendFlags modify a send work request (enum ibv_send_flags).
type SendFlags uint32

// Send flags.
const (
	// SendFence waits for the QP's earlier READ and atomic requests to
	// complete before this one starts (IBV_SEND_FENCE).
	SendFence SendFlags = 1
	// SendSignaled asks for a completion on success (IBV_SEND_SIGNALED);
	// failures always complete. QPInitAttr.SQSigAll signals every request.
	SendSignaled SendFlags = 2
	// SendSolicited sets the solicited-event bit on the last packet
	// (IBV_SEND_SOLICITED).
	SendSolicited SendFlags = 4
	// SendInline copies the data when the request is posted, so its
	// buffers may be reused at once (IBV_SEND_INLINE); at most
	// QPCap.MaxInlineData bytes, SEND and RDMA WRITE only.
	SendInline SendFlags = 8
	// SendIPCsum asks for checksum offload on raw and UD IPoIB QPs
	// (IBV_SEND_IP_CSUM); it has no meaning here.
	SendIPCsum SendFlags = 16
)

// String returns the flags as "SIGNALED|INLINE" (IBV_SEND_ prefix
// dropped), unnamed bits in hex, "0" for none.
func (f SendFlags) String() string { return ib.SendFlags(f).String() }

// WCStatus is the status of a work completion (enum ibv_wc_status). Every
// data-path failure reaches the program as a status, not as a Go error.
type WCStatus uint8

// Work completion statuses.
const (
	WCSuccess          WCStatus = 0  // IBV_WC_SUCCESS
	WCLocLenErr        WCStatus = 1  // IBV_WC_LOC_LEN_ERR: receive buffer too small
	WCLocQPOpErr       WCStatus = 2  // IBV_WC_LOC_QP_OP_ERR
	WCLocEECOpErr      WCStatus = 3  // IBV_WC_LOC_EEC_OP_ERR
	WCLocProtErr       WCStatus = 4  // IBV_WC_LOC_PROT_ERR: an SGE outside its region, or a bad lkey
	WCWRFlushErr       WCStatus = 5  // IBV_WC_WR_FLUSH_ERR: flushed by a QP in the error state or a closing device
	WCMWBindErr        WCStatus = 6  // IBV_WC_MW_BIND_ERR: a bind or local invalidation that could not be done
	WCBadRespErr       WCStatus = 7  // IBV_WC_BAD_RESP_ERR
	WCLocAccessErr     WCStatus = 8  // IBV_WC_LOC_ACCESS_ERR
	WCRemInvReqErr     WCStatus = 9  // IBV_WC_REM_INV_REQ_ERR
	WCRemAccessErr     WCStatus = 10 // IBV_WC_REM_ACCESS_ERR: the peer refused the rkey, range or rights
	WCRemOpErr         WCStatus = 11 // IBV_WC_REM_OP_ERR
	WCRetryExcErr      WCStatus = 12 // IBV_WC_RETRY_EXC_ERR: no answer after QPAttr.RetryCnt retries
	WCRNRRetryExcErr   WCStatus = 13 // IBV_WC_RNR_RETRY_EXC_ERR: the peer had no receive posted
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

// String returns what rdma-core's ibv_wc_status_str returns ("success",
// "Work Request Flushed Error"), so messages match the C tools.
func (s WCStatus) String() string { return ib.WCStatus(s).String() }

// WCOpcode says which operation a work completion is for (enum
// ibv_wc_opcode). Receive completions have bit 0x80 set.
type WCOpcode uint8

// Work completion opcodes.
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
	WCRecv            WCOpcode = 128 // IBV_WC_RECV: a receive WR consumed by a SEND
	WCRecvRDMAWithImm WCOpcode = 129 // IBV_WC_RECV_RDMA_WITH_IMM: consumed by an RDMA WRITE with immediate
)

// String returns the libibverbs name ("IBV_WC_SEND"), or "WCOpcode(n)".
func (o WCOpcode) String() string { return ib.WCOpcode(o).String() }

// WCFlags are the wc_flags of a work completion (enum ibv_wc_flags).
type WCFlags uint32

// Work completion flags.
const (
	WCFlagGRH      WCFlags = 1 // IBV_WC_GRH: the buffer starts with the 40-byte network header (UD)
	WCFlagWithImm  WCFlags = 2 // IBV_WC_WITH_IMM: WC.Imm is valid
	WCFlagIPCsumOK WCFlags = 4 // IBV_WC_IP_CSUM_OK
	WCFlagWithInv  WCFlags = 8 // IBV_WC_WITH_INV: the message invalidated WC.InvalidatedRKey
)

// String returns the flags as "GRH|WITH_IMM" (IBV_WC_ prefix dropped),
// unnamed bits in hex, "0" for none.
func (f WCFlags) String() string { return ib.WCFlags(f).String() }

// QPType is the transport service of a queue pair (enum ibv_qp_type).
type QPType uint8

// QP types.
const (
	QPTypeRC QPType = 2 // IBV_QPT_RC, reliable connected
	QPTypeUC QPType = 3 // IBV_QPT_UC, unreliable connected
	QPTypeUD QPType = 4 // IBV_QPT_UD, unreliable datagram
)

// String returns "RC", "UC" or "UD", or "QPType(n)".
func (t QPType) String() string { return ib.QPType(t).String() }

// QPState is the state of a queue pair (enum ibv_qp_state). A new QP is in
// RESET; QP.Modify moves it to INIT (receives may be posted), RTR (it
// accepts packets) and RTS (sends may be posted). A fault moves it to ERR,
// which flushes its work requests.
type QPState uint8

// QP states.
const (
	QPStateReset QPState = 0 // IBV_QPS_RESET
	QPStateInit  QPState = 1 // IBV_QPS_INIT
	QPStateRTR   QPState = 2 // IBV_QPS_RTR, ready to receive
	QPStateRTS   QPState = 3 // IBV_QPS_RTS, ready to send
	QPStateSQD   QPState = 4 // IBV_QPS_SQD, send queue drain
	QPStateSQE   QPState = 5 // IBV_QPS_SQE, send queue error (UC and UD)
	QPStateErr   QPState = 6 // IBV_QPS_ERR
)

// String returns the state as the specification writes it ("RTS").
func (s QPState) String() string { return ib.QPState(s).String() }

// QPAttrMask selects the attributes QP.Modify sets (enum
// ibv_qp_attr_mask). Each transition requires some and accepts others, as
// in IBA 10.3.1; Modify says which are missing or not allowed.
type QPAttrMask uint32

// QP attribute mask bits.
const (
	QPAttrState            QPAttrMask = 0x1       // IBV_QP_STATE
	QPAttrCurState         QPAttrMask = 0x2       // IBV_QP_CUR_STATE
	QPAttrEnSQDAsyncNotify QPAttrMask = 0x4       // IBV_QP_EN_SQD_ASYNC_NOTIFY
	QPAttrAccessFlags      QPAttrMask = 0x8       // IBV_QP_ACCESS_FLAGS
	QPAttrPKeyIndex        QPAttrMask = 0x10      // IBV_QP_PKEY_INDEX
	QPAttrPort             QPAttrMask = 0x20      // IBV_QP_PORT
	QPAttrQKey             QPAttrMask = 0x40      // IBV_QP_QKEY
	QPAttrAV               QPAttrMask = 0x80      // IBV_QP_AV: QPAttr.AH
	QPAttrPathMTU          QPAttrMask = 0x100     // IBV_QP_PATH_MTU
	QPAttrTimeout          QPAttrMask = 0x200     // IBV_QP_TIMEOUT
	QPAttrRetryCnt         QPAttrMask = 0x400     // IBV_QP_RETRY_CNT
	QPAttrRNRRetry         QPAttrMask = 0x800     // IBV_QP_RNR_RETRY
	QPAttrRQPSN            QPAttrMask = 0x1000    // IBV_QP_RQ_PSN
	QPAttrMaxQPRdAtomic    QPAttrMask = 0x2000    // IBV_QP_MAX_QP_RD_ATOMIC
	QPAttrAltPath          QPAttrMask = 0x4000    // IBV_QP_ALT_PATH
	QPAttrMinRNRTimer      QPAttrMask = 0x8000    // IBV_QP_MIN_RNR_TIMER
	QPAttrSQPSN            QPAttrMask = 0x10000   // IBV_QP_SQ_PSN
	QPAttrMaxDestRdAtomic  QPAttrMask = 0x20000   // IBV_QP_MAX_DEST_RD_ATOMIC
	QPAttrPathMigState     QPAttrMask = 0x40000   // IBV_QP_PATH_MIG_STATE
	QPAttrCap              QPAttrMask = 0x80000   // IBV_QP_CAP
	QPAttrDestQPN          QPAttrMask = 0x100000  // IBV_QP_DEST_QPN
	QPAttrRateLimit        QPAttrMask = 0x2000000 // IBV_QP_RATE_LIMIT
)

// String returns the mask as "STATE|AV|PATH_MTU" (IBV_QP_ prefix dropped),
// unnamed bits in hex, "0" for none.
func (m QPAttrMask) String() string { return ib.QPAttrMask(m).String() }
