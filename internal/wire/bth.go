package wire

import "encoding/binary"

// BTH is a view of the 12-byte Base Transport Header (IBA 9.2), the first
// header of every RoCEv2 transport packet.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    OpCode     |S|M|Pad|  TVer |             P_Key             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|F|B|   resv6   |                  DestQP                       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|A|    resv7    |                    PSN                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// S = solicited event, M = MigReq, Pad = pad count, F/B = FECN/BECN,
// A = AckReq.
type BTH []byte

// BTHSize is the length of the Base Transport Header.
const BTHSize = 12

const (
	bthOpcode   = 0
	bthFlags    = 1 // SE, M, PadCnt, TVer
	bthPKey     = 2
	bthECN      = 4 // FECN, BECN, resv6: the byte the ICRC masks
	bthDestQP   = 5
	bthAckReq   = 8
	bthPSN      = 9
	bthSE       = 0x80
	bthMigReq   = 0x40
	bthPadShift = 4
	bthPadMask  = 0x30
	bthTVerMask = 0x0f
	bthFECN     = 0x80
	bthBECN     = 0x40
	bthAckBit   = 0x80
	mask24      = 0xffffff
)

// Opcode returns the packet's operation code.
func (b BTH) Opcode() Opcode { return Opcode(b[bthOpcode]) }

// SolicitedEvent reports the SE bit.
func (b BTH) SolicitedEvent() bool { return b[bthFlags]&bthSE != 0 }

// MigReq reports the M bit (path migration; rxe sends 0 and ignores it).
func (b BTH) MigReq() bool { return b[bthFlags]&bthMigReq != 0 }

// PadCount returns the number of pad bytes (0–3) between payload and ICRC.
func (b BTH) PadCount() int { return int(b[bthFlags]&bthPadMask) >> bthPadShift }

// TransportVersion returns TVer, which must be 0 (IBA 9.2.5).
func (b BTH) TransportVersion() uint8 { return b[bthFlags] & bthTVerMask }

// PKey returns the partition key.
func (b BTH) PKey() uint16 { return binary.BigEndian.Uint16(b[bthPKey:]) }

// FECN reports the forward explicit congestion notification bit.
func (b BTH) FECN() bool { return b[bthECN]&bthFECN != 0 }

// BECN reports the backward explicit congestion notification bit.
func (b BTH) BECN() bool { return b[bthECN]&bthBECN != 0 }

// DestQP returns the 24-bit destination queue pair number.
func (b BTH) DestQP() uint32 { return get24(b[bthDestQP:]) }

// AckRequest reports the A bit: the requester asks for an acknowledgement.
func (b BTH) AckRequest() bool { return b[bthAckReq]&bthAckBit != 0 }

// PSN returns the packet sequence number.
func (b BTH) PSN() PSN { return PSN(get24(b[bthPSN:])) }

// SetOpcode sets the operation code.
func (b BTH) SetOpcode(op Opcode) { b[bthOpcode] = byte(op) }

// SetSolicitedEvent sets or clears the SE bit.
func (b BTH) SetSolicitedEvent(v bool) { setBit(&b[bthFlags], bthSE, v) }

// SetMigReq sets or clears the M bit.
func (b BTH) SetMigReq(v bool) { setBit(&b[bthFlags], bthMigReq, v) }

// SetPadCount sets the pad count; only the low two bits of n are used.
func (b BTH) SetPadCount(n int) {
	b[bthFlags] = b[bthFlags]&^bthPadMask | byte(n&3)<<bthPadShift
}

// SetTransportVersion sets TVer; only the low four bits of v are used.
func (b BTH) SetTransportVersion(v uint8) {
	b[bthFlags] = b[bthFlags]&^bthTVerMask | v&bthTVerMask
}

// SetPKey sets the partition key.
func (b BTH) SetPKey(k uint16) { binary.BigEndian.PutUint16(b[bthPKey:], k) }

// SetFECN sets or clears the FECN bit.
func (b BTH) SetFECN(v bool) { setBit(&b[bthECN], bthFECN, v) }

// SetBECN sets or clears the BECN bit.
func (b BTH) SetBECN(v bool) { setBit(&b[bthECN], bthBECN, v) }

// SetDestQP sets the 24-bit destination QP; higher bits of qpn are dropped.
func (b BTH) SetDestQP(qpn uint32) { put24(b[bthDestQP:], qpn) }

// SetAckRequest sets or clears the A bit.
func (b BTH) SetAckRequest(v bool) { setBit(&b[bthAckReq], bthAckBit, v) }

// SetPSN sets the packet sequence number.
func (b BTH) SetPSN(p PSN) { put24(b[bthPSN:], uint32(p)) }

// BTHFields holds every BTH field, for writing a header in one call.
type BTHFields struct {
	Opcode           Opcode
	SolicitedEvent   bool
	MigReq           bool
	PadCount         int
	TransportVersion uint8
	PKey             uint16
	FECN, BECN       bool
	DestQP           uint32
	AckRequest       bool
	PSN              PSN
}

// Encode writes all fields of f into b; the reserved bits become zero.
func (b BTH) Encode(f *BTHFields) {
	b[bthOpcode] = byte(f.Opcode)
	b[bthFlags] = byte(f.PadCount&3)<<bthPadShift | f.TransportVersion&bthTVerMask
	b.SetSolicitedEvent(f.SolicitedEvent)
	b.SetMigReq(f.MigReq)
	b.SetPKey(f.PKey)
	b[bthECN] = 0
	b.SetFECN(f.FECN)
	b.SetBECN(f.BECN)
	b.SetDestQP(f.DestQP)
	b[bthAckReq] = 0
	b.SetAckRequest(f.AckRequest)
	b.SetPSN(f.PSN)
}

// Decode returns all fields of b.
func (b BTH) Decode() BTHFields {
	return BTHFields{
		Opcode:           b.Opcode(),
		SolicitedEvent:   b.SolicitedEvent(),
		MigReq:           b.MigReq(),
		PadCount:         b.PadCount(),
		TransportVersion: b.TransportVersion(),
		PKey:             b.PKey(),
		FECN:             b.FECN(),
		BECN:             b.BECN(),
		DestQP:           b.DestQP(),
		AckRequest:       b.AckRequest(),
		PSN:              b.PSN(),
	}
}

func setBit(p *byte, bit byte, v bool) {
	if v {
		*p |= bit
	} else {
		*p &^= bit
	}
}

// put24 writes the low 24 bits of v big-endian into b[0:3].
func put24(b []byte, v uint32) {
	_ = b[2]
	b[0] = byte(v >> 16)
	b[1] = byte(v >> 8)
	b[2] = byte(v)
}

// get24 reads a 24-bit big-endian value from b[0:3].
func get24(b []byte) uint32 {
	_ = b[2]
	return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
}
