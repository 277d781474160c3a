package wire

// Opcode is the BTH operation code (IBA 9.2.1, table 38). The upper three
// bits select the transport, the lower five the operation.
type Opcode uint8

// Transport is the transport-service part of an opcode (opcode & 0xE0).
type Transport uint8

// Transport services (IBA 9.2.1).
const (
	TransportRC  Transport = 0x00 // reliable connection
	TransportUC  Transport = 0x20 // unreliable connection
	TransportRD  Transport = 0x40 // reliable datagram (not supported)
	TransportUD  Transport = 0x60 // unreliable datagram
	TransportCNP Transport = 0x80 // congestion notification (RoCEv2 Annex A17)
)

// Transport returns the transport service encoded in the opcode.
func (op Opcode) Transport() Transport { return Transport(op & 0xe0) }

// RC opcodes.
const (
	RCSendFirst              Opcode = 0x00
	RCSendMiddle             Opcode = 0x01
	RCSendLast               Opcode = 0x02
	RCSendLastWithImmediate  Opcode = 0x03
	RCSendOnly               Opcode = 0x04
	RCSendOnlyWithImmediate  Opcode = 0x05
	RCWriteFirst             Opcode = 0x06
	RCWriteMiddle            Opcode = 0x07
	RCWriteLast              Opcode = 0x08
	RCWriteLastWithImmediate Opcode = 0x09
	RCWriteOnly              Opcode = 0x0a
	RCWriteOnlyWithImmediate Opcode = 0x0b
	RCReadRequest            Opcode = 0x0c
	RCReadResponseFirst      Opcode = 0x0d
	RCReadResponseMiddle     Opcode = 0x0e
	RCReadResponseLast       Opcode = 0x0f
	RCReadResponseOnly       Opcode = 0x10
	RCAcknowledge            Opcode = 0x11
	RCAtomicAcknowledge      Opcode = 0x12
	RCCompareSwap            Opcode = 0x13
	RCFetchAdd               Opcode = 0x14
	RCSendLastWithInvalidate Opcode = 0x16
	RCSendOnlyWithInvalidate Opcode = 0x17
	RCFlush                  Opcode = 0x1c
	RCAtomicWrite            Opcode = 0x1d
	UCSendFirst              Opcode = 0x20
	UCSendMiddle             Opcode = 0x21
	UCSendLast               Opcode = 0x22
	UCSendLastWithImmediate  Opcode = 0x23
	UCSendOnly               Opcode = 0x24
	UCSendOnlyWithImmediate  Opcode = 0x25
	UCWriteFirst             Opcode = 0x26
	UCWriteMiddle            Opcode = 0x27
	UCWriteLast              Opcode = 0x28
	UCWriteLastWithImmediate Opcode = 0x29
	UCWriteOnly              Opcode = 0x2a
	UCWriteOnlyWithImmediate Opcode = 0x2b
	UDSendOnly               Opcode = 0x64
	UDSendOnlyWithImmediate  Opcode = 0x65
	CNP                      Opcode = 0x81
)

// Header identifies one extended transport header. The order of the
// constants is the order in which headers follow the BTH (IBA 9.2, and
// doc/protocol.md §3.1: DETH → RETH → ImmDt, FETH → RETH, AETH → AtomicAckETH).
type Header uint8

// Extended transport headers.
const (
	HdrFETH Header = iota
	HdrDETH
	HdrRETH
	HdrAtomicETH
	HdrAETH
	HdrAtomicAckETH
	HdrImmDt
	HdrIETH
	HdrCNPReserved // the 16 reserved bytes of a CNP
	numHeaders
)

var headerSizes = [numHeaders]int{
	HdrFETH:         FETHSize,
	HdrDETH:         DETHSize,
	HdrRETH:         RETHSize,
	HdrAtomicETH:    AtomicETHSize,
	HdrAETH:         AETHSize,
	HdrAtomicAckETH: AtomicAckETHSize,
	HdrImmDt:        ImmDtSize,
	HdrIETH:         IETHSize,
	HdrCNPReserved:  CNPReservedSize,
}

// CNPReservedSize is the length of the reserved block after a CNP's BTH.
const CNPReservedSize = 16

// Size returns the header's length in bytes.
func (h Header) Size() int { return headerSizes[h] }

// HeaderSet is a set of extended headers, one bit per [Header].
type HeaderSet uint16

func hdrs(hs ...Header) HeaderSet {
	var s HeaderSet
	for _, h := range hs {
		s |= 1 << h
	}
	return s
}

// Has reports whether h is in the set.
func (s HeaderSet) Has(h Header) bool { return s&(1<<h) != 0 }

// OpFlags are the semantic attributes of an opcode.
type OpFlags uint32

// Opcode attributes.
const (
	OpRequest        OpFlags = 1 << iota // sent by a requester
	OpResponse                           // sent by a responder: ACKs, read responses
	OpSend                               // part of a SEND message
	OpWrite                              // part of an RDMA WRITE message
	OpRead                               // RDMA READ request or response
	OpAtomic                             // COMPARE SWAP or FETCH ADD request or its ACK
	OpFlush                              // FLUSH request
	OpAtomicWrite                        // ATOMIC WRITE request
	OpFirst                              // first packet of a multi-packet message
	OpMiddle                             // middle packet
	OpLast                               // last packet
	OpPayload                            // carries payload
	OpConsumesRecv                       // consumes a receive WQE at the responder
	OpRecvCompletion                     // completes a receive WQE at the responder
	OpCongestion                         // congestion notification, no transport semantics

	// OpOnly marks a single-packet message: both first and last.
	OpOnly = OpFirst | OpLast
)

// OpInfo describes one opcode. It is computed once from the spec list below;
// lengths and offsets are derived, never typed by hand.
type OpInfo struct {
	Name    string
	Headers HeaderSet
	Flags   OpFlags
	// HeaderLen is the length of the BTH plus all extended headers.
	HeaderLen int
	// offsets holds each present header's offset from the start of the BTH.
	offsets [numHeaders]uint8
}

// Valid reports whether the opcode is known to this codec.
func (i *OpInfo) Valid() bool { return i.Name != "" }

// Is reports whether all flags in f are set.
func (i *OpInfo) Is(f OpFlags) bool { return i.Flags&f == f }

// Offset returns the offset of header h from the start of the BTH, and
// whether the opcode carries h at all.
func (i *OpInfo) Offset(h Header) (int, bool) {
	return int(i.offsets[h]), i.Headers.Has(h)
}

var opTable [256]OpInfo

// Info returns the table entry of op; check [OpInfo.Valid] for unknown opcodes.
func (op Opcode) Info() *OpInfo { return &opTable[op] }

// String returns the spec name of the opcode, such as "RC_SEND_FIRST", or
// "UNKNOWN_0xNN".
func (op Opcode) String() string {
	if i := op.Info(); i.Valid() {
		return i.Name
	}
	const hex = "0123456789abcdef"
	return "UNKNOWN_0x" + string([]byte{hex[op>>4], hex[op&15]})
}

type opSpec struct {
	op      Opcode
	name    string
	headers HeaderSet
	flags   OpFlags
}

// Common flag combinations of the connected-service opcodes.
const (
	sendReq  = OpRequest | OpSend | OpPayload
	writeReq = OpRequest | OpWrite | OpPayload
	readResp = OpResponse | OpRead | OpPayload
)

// connectedSpecs are the SEND and RDMA WRITE opcodes, shared by RC and UC
// (doc/protocol.md §3.2); the operation code is added to the transport base.
var connectedSpecs = []opSpec{
	{0x00, "SEND_FIRST", 0, sendReq | OpFirst | OpConsumesRecv},
	{0x01, "SEND_MIDDLE", 0, sendReq | OpMiddle},
	{0x02, "SEND_LAST", 0, sendReq | OpLast | OpRecvCompletion},
	{0x03, "SEND_LAST_WITH_IMMEDIATE", hdrs(HdrImmDt), sendReq | OpLast | OpRecvCompletion},
	{0x04, "SEND_ONLY", 0, sendReq | OpOnly | OpConsumesRecv | OpRecvCompletion},
	{0x05, "SEND_ONLY_WITH_IMMEDIATE", hdrs(HdrImmDt), sendReq | OpOnly | OpConsumesRecv | OpRecvCompletion},
	{0x06, "RDMA_WRITE_FIRST", hdrs(HdrRETH), writeReq | OpFirst},
	{0x07, "RDMA_WRITE_MIDDLE", 0, writeReq | OpMiddle},
	{0x08, "RDMA_WRITE_LAST", 0, writeReq | OpLast},
	{0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", hdrs(HdrImmDt), writeReq | OpLast | OpConsumesRecv | OpRecvCompletion},
	{0x0a, "RDMA_WRITE_ONLY", hdrs(HdrRETH), writeReq | OpOnly},
	{0x0b, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", hdrs(HdrRETH, HdrImmDt), writeReq | OpOnly | OpConsumesRecv | OpRecvCompletion},
}

// rcOnlySpecs are the opcodes that exist for RC only.
var rcOnlySpecs = []opSpec{
	{RCReadRequest, "RDMA_READ_REQUEST", hdrs(HdrRETH), OpRequest | OpRead | OpOnly},
	{RCReadResponseFirst, "RDMA_READ_RESPONSE_FIRST", hdrs(HdrAETH), readResp | OpFirst},
	{RCReadResponseMiddle, "RDMA_READ_RESPONSE_MIDDLE", 0, readResp | OpMiddle},
	{RCReadResponseLast, "RDMA_READ_RESPONSE_LAST", hdrs(HdrAETH), readResp | OpLast},
	{RCReadResponseOnly, "RDMA_READ_RESPONSE_ONLY", hdrs(HdrAETH), readResp | OpOnly},
	{RCAcknowledge, "ACKNOWLEDGE", hdrs(HdrAETH), OpResponse | OpOnly},
	{RCAtomicAcknowledge, "ATOMIC_ACKNOWLEDGE", hdrs(HdrAETH, HdrAtomicAckETH), OpResponse | OpAtomic | OpOnly},
	{RCCompareSwap, "COMPARE_SWAP", hdrs(HdrAtomicETH), OpRequest | OpAtomic | OpOnly},
	{RCFetchAdd, "FETCH_ADD", hdrs(HdrAtomicETH), OpRequest | OpAtomic | OpOnly},
	{RCSendLastWithInvalidate, "SEND_LAST_WITH_INVALIDATE", hdrs(HdrIETH), sendReq | OpLast | OpRecvCompletion},
	{RCSendOnlyWithInvalidate, "SEND_ONLY_WITH_INVALIDATE", hdrs(HdrIETH), sendReq | OpOnly | OpConsumesRecv | OpRecvCompletion},
	{RCFlush, "FLUSH", hdrs(HdrFETH, HdrRETH), OpRequest | OpFlush | OpOnly},
	{RCAtomicWrite, "ATOMIC_WRITE", hdrs(HdrRETH), OpRequest | OpAtomicWrite | OpPayload | OpOnly},
}

// datagramSpecs are the UD opcodes and the RoCEv2 CNP.
var datagramSpecs = []opSpec{
	{UDSendOnly, "UD_SEND_ONLY", hdrs(HdrDETH), sendReq | OpOnly | OpConsumesRecv | OpRecvCompletion},
	{UDSendOnlyWithImmediate, "UD_SEND_ONLY_WITH_IMMEDIATE", hdrs(HdrDETH, HdrImmDt), sendReq | OpOnly | OpConsumesRecv | OpRecvCompletion},
	{CNP, "CNP", hdrs(HdrCNPReserved), OpCongestion | OpOnly},
}

func init() {
	for _, s := range connectedSpecs {
		addOp(opSpec{Opcode(TransportRC) + s.op, "RC_" + s.name, s.headers, s.flags})
		addOp(opSpec{Opcode(TransportUC) + s.op, "UC_" + s.name, s.headers, s.flags})
	}
	for _, s := range rcOnlySpecs {
		s.name = "RC_" + s.name
		addOp(s)
	}
	for _, s := range datagramSpecs {
		addOp(s)
	}
}

// addOp derives lengths and offsets from the header set and enters the opcode.
func addOp(s opSpec) {
	info := OpInfo{Name: s.name, Headers: s.headers, Flags: s.flags}
	off := BTHSize
	for h := Header(0); h < numHeaders; h++ {
		if s.headers.Has(h) {
			info.offsets[h] = uint8(off)
			off += h.Size()
		}
	}
	info.HeaderLen = off
	if opTable[s.op].Valid() {
		panic("wire: duplicate opcode " + s.name)
	}
	opTable[s.op] = info
}
