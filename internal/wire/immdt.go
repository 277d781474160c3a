package wire

import "encoding/binary"

// ImmDt is a view of the 4-byte Immediate Data Extended Transport Header
// (IBA 9.3.6), carried by the last or only packet of a *_WITH_IMMEDIATE
// message.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Immediate Data                         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// libibverbs treats imm_data as a value already in network order and rxe
// copies the four bytes unchanged; Imm returns them read big-endian.
type ImmDt []byte

// ImmDtSize is the length of the Immediate Data header.
const ImmDtSize = 4

// Imm returns the immediate data, read big-endian.
func (b ImmDt) Imm() uint32 { return binary.BigEndian.Uint32(b) }

// SetImm sets the immediate data, written big-endian.
func (b ImmDt) SetImm(v uint32) { binary.BigEndian.PutUint32(b, v) }

// ImmDtFields holds every ImmDt field.
type ImmDtFields struct {
	Imm uint32
}

// Encode writes all fields of f into b.
func (b ImmDt) Encode(f *ImmDtFields) { b.SetImm(f.Imm) }

// Decode returns all fields of b.
func (b ImmDt) Decode() ImmDtFields { return ImmDtFields{Imm: b.Imm()} }
