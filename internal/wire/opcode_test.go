package wire

import (
	"strings"
	"testing"
)

// specOpcode is one row of the specification's opcode list (IBA 9.2.1 and
// the header sets of IBA 9.3; doc/protocol.md §3), typed by hand: the computed
// table must agree with it.
type specOpcode struct {
	op      Opcode
	name    string
	headers []Header // in wire order
	hdrLen  int
	payload bool
	pos     string // "F", "M", "L", "FL"
	rwr     bool   // consumes a receive WQE
	cqe     bool   // generates a receive completion
}

var specOpcodes = []specOpcode{
	{0x00, "RC_SEND_FIRST", nil, 12, true, "F", true, false},
	{0x01, "RC_SEND_MIDDLE", nil, 12, true, "M", false, false},
	{0x02, "RC_SEND_LAST", nil, 12, true, "L", false, true},
	{0x03, "RC_SEND_LAST_WITH_IMMEDIATE", []Header{HdrImmDt}, 16, true, "L", false, true},
	{0x04, "RC_SEND_ONLY", nil, 12, true, "FL", true, true},
	{0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", []Header{HdrImmDt}, 16, true, "FL", true, true},
	{0x06, "RC_RDMA_WRITE_FIRST", []Header{HdrRETH}, 28, true, "F", false, false},
	{0x07, "RC_RDMA_WRITE_MIDDLE", nil, 12, true, "M", false, false},
	{0x08, "RC_RDMA_WRITE_LAST", nil, 12, true, "L", false, false},
	{0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", []Header{HdrImmDt}, 16, true, "L", true, true},
	{0x0a, "RC_RDMA_WRITE_ONLY", []Header{HdrRETH}, 28, true, "FL", false, false},
	{0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", []Header{HdrRETH, HdrImmDt}, 32, true, "FL", true, true},
	{0x0c, "RC_RDMA_READ_REQUEST", []Header{HdrRETH}, 28, false, "FL", false, false},
	{0x0d, "RC_RDMA_READ_RESPONSE_FIRST", []Header{HdrAETH}, 16, true, "F", false, false},
	{0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", nil, 12, true, "M", false, false},
	{0x0f, "RC_RDMA_READ_RESPONSE_LAST", []Header{HdrAETH}, 16, true, "L", false, false},
	{0x10, "RC_RDMA_READ_RESPONSE_ONLY", []Header{HdrAETH}, 16, true, "FL", false, false},
	{0x11, "RC_ACKNOWLEDGE", []Header{HdrAETH}, 16, false, "FL", false, false},
	{0x12, "RC_ATOMIC_ACKNOWLEDGE", []Header{HdrAETH, HdrAtomicAckETH}, 24, false, "FL", false, false},
	{0x13, "RC_COMPARE_SWAP", []Header{HdrAtomicETH}, 40, false, "FL", false, false},
	{0x14, "RC_FETCH_ADD", []Header{HdrAtomicETH}, 40, false, "FL", false, false},
	{0x16, "RC_SEND_LAST_WITH_INVALIDATE", []Header{HdrIETH}, 16, true, "L", false, true},
	{0x17, "RC_SEND_ONLY_WITH_INVALIDATE", []Header{HdrIETH}, 16, true, "FL", true, true},
	{0x1c, "RC_FLUSH", []Header{HdrFETH, HdrRETH}, 32, false, "FL", false, false},
	{0x1d, "RC_ATOMIC_WRITE", []Header{HdrRETH}, 28, true, "FL", false, false},
	{0x20, "UC_SEND_FIRST", nil, 12, true, "F", true, false},
	{0x21, "UC_SEND_MIDDLE", nil, 12, true, "M", false, false},
	{0x22, "UC_SEND_LAST", nil, 12, true, "L", false, true},
	{0x23, "UC_SEND_LAST_WITH_IMMEDIATE", []Header{HdrImmDt}, 16, true, "L", false, true},
	{0x24, "UC_SEND_ONLY", nil, 12, true, "FL", true, true},
	{0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", []Header{HdrImmDt}, 16, true, "FL", true, true},
	{0x26, "UC_RDMA_WRITE_FIRST", []Header{HdrRETH}, 28, true, "F", false, false},
	{0x27, "UC_RDMA_WRITE_MIDDLE", nil, 12, true, "M", false, false},
	{0x28, "UC_RDMA_WRITE_LAST", nil, 12, true, "L", false, false},
	{0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", []Header{HdrImmDt}, 16, true, "L", true, true},
	{0x2a, "UC_RDMA_WRITE_ONLY", []Header{HdrRETH}, 28, true, "FL", false, false},
	{0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", []Header{HdrRETH, HdrImmDt}, 32, true, "FL", true, true},
	{0x64, "UD_SEND_ONLY", []Header{HdrDETH}, 20, true, "FL", true, true},
	{0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", []Header{HdrDETH, HdrImmDt}, 24, true, "FL", true, true},
	{0x81, "CNP", []Header{HdrCNPReserved}, 28, false, "FL", false, false},
}

func TestOpcodeTableMatchesSpec(t *testing.T) {
	listed := map[Opcode]bool{}
	for _, s := range specOpcodes {
		listed[s.op] = true
		info := s.op.Info()
		if !info.Valid() {
			t.Errorf("%#02x %s: missing from the table", byte(s.op), s.name)
			continue
		}
		if info.Name != s.name || s.op.String() != s.name {
			t.Errorf("%#02x: name %q, want %q", byte(s.op), info.Name, s.name)
		}
		if info.HeaderLen != s.hdrLen {
			t.Errorf("%s: header length %d, want %d", s.name, info.HeaderLen, s.hdrLen)
		}
		var set HeaderSet
		off := BTHSize
		for _, h := range s.headers {
			set |= 1 << h
			if got, ok := info.Offset(h); !ok || got != off {
				t.Errorf("%s: header %d at %d (present %v), want %d", s.name, h, got, ok, off)
			}
			off += h.Size()
		}
		if info.Headers != set {
			t.Errorf("%s: headers %b, want %b", s.name, info.Headers, set)
		}
		if got := info.Is(OpPayload); got != s.payload {
			t.Errorf("%s: payload %v, want %v", s.name, got, s.payload)
		}
		pos := ""
		if info.Is(OpFirst) {
			pos += "F"
		}
		if info.Is(OpMiddle) {
			pos += "M"
		}
		if info.Is(OpLast) {
			pos += "L"
		}
		if pos != s.pos {
			t.Errorf("%s: position %q, want %q", s.name, pos, s.pos)
		}
		if got := info.Is(OpConsumesRecv); got != s.rwr {
			t.Errorf("%s: consumes receive WQE %v, want %v", s.name, got, s.rwr)
		}
		if got := info.Is(OpRecvCompletion); got != s.cqe {
			t.Errorf("%s: receive completion %v, want %v", s.name, got, s.cqe)
		}
		if got := info.Headers.Has(HdrImmDt); got != strings.Contains(s.name, "WITH_IMMEDIATE") {
			t.Errorf("%s: ImmDt presence %v disagrees with the name", s.name, got)
		}
	}
	for op := range 256 {
		if Opcode(op).Info().Valid() && !listed[Opcode(op)] {
			t.Errorf("%#02x %v: in the table but not in the spec list", op, Opcode(op))
		}
	}
}

func TestOpcodeSemantics(t *testing.T) {
	for _, tc := range []struct {
		op   Opcode
		want OpFlags
	}{
		{RCSendFirst, OpRequest | OpSend},
		{RCWriteMiddle, OpRequest | OpWrite},
		{RCReadRequest, OpRequest | OpRead},
		{RCReadResponseMiddle, OpResponse | OpRead},
		{RCAcknowledge, OpResponse},
		{RCAtomicAcknowledge, OpResponse | OpAtomic},
		{RCCompareSwap, OpRequest | OpAtomic},
		{RCFetchAdd, OpRequest | OpAtomic},
		{RCFlush, OpRequest | OpFlush},
		{RCAtomicWrite, OpRequest | OpAtomicWrite},
		{UCWriteOnly, OpRequest | OpWrite},
		{UDSendOnly, OpRequest | OpSend},
		{CNP, OpCongestion},
	} {
		if !tc.op.Info().Is(tc.want) {
			t.Errorf("%v: flags %b lack %b", tc.op, tc.op.Info().Flags, tc.want)
		}
		if tc.op.Info().Is(OpRequest) == tc.op.Info().Is(OpResponse) && tc.op != CNP {
			t.Errorf("%v: must be exactly one of request and response", tc.op)
		}
	}
	if got := Opcode(0x15).String(); got != "UNKNOWN_0x15" {
		t.Errorf("reserved opcode String = %q", got)
	}
	for op, want := range map[Opcode]Transport{RCFetchAdd: TransportRC, UCSendOnly: TransportUC, UDSendOnly: TransportUD, CNP: TransportCNP} {
		if op.Transport() != want {
			t.Errorf("%v: transport %#x, want %#x", op, op.Transport(), want)
		}
	}
}
