package wire

import "encoding/binary"

// FETH is a view of the 4-byte Flush Extended Transport Header (IBA 1.5,
// 9.3.9), carried by FLUSH before the RETH.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Reserved                     |SEL| PLT   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// PLT is the placement type (1 global visibility, 2 persistence), SEL the
// selectivity level (0 address range, 1 whole memory region).
type FETH []byte

// FETHSize is the length of the Flush Extended Transport Header.
const FETHSize = 4

const (
	fethPLTMask  = 0x0f
	fethSELShift = 4
	fethSELMask  = 0x3
)

// PlacementType returns the flush placement type.
func (b FETH) PlacementType() uint8 { return uint8(binary.BigEndian.Uint32(b) & fethPLTMask) }

// Selectivity returns the flush selectivity level.
func (b FETH) Selectivity() uint8 {
	return uint8(binary.BigEndian.Uint32(b) >> fethSELShift & fethSELMask)
}

// FETHFields holds every FETH field.
type FETHFields struct {
	PlacementType uint8
	Selectivity   uint8
}

// Encode writes all fields of f into b; reserved bits become zero.
func (b FETH) Encode(f *FETHFields) {
	v := uint32(f.PlacementType)&fethPLTMask | (uint32(f.Selectivity)&fethSELMask)<<fethSELShift
	binary.BigEndian.PutUint32(b, v)
}

// Decode returns all fields of b.
func (b FETH) Decode() FETHFields {
	return FETHFields{PlacementType: b.PlacementType(), Selectivity: b.Selectivity()}
}
