package wire

import "encoding/binary"

// IETH is a view of the 4-byte Invalidate Extended Transport Header
// (IBA 9.3.7), carried by the last or only packet of SEND WITH INVALIDATE.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             R_Key                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type IETH []byte

// IETHSize is the length of the Invalidate Extended Transport Header.
const IETHSize = 4

// RKey returns the remote key the responder is asked to invalidate.
func (b IETH) RKey() uint32 { return binary.BigEndian.Uint32(b) }

// SetRKey sets the key to invalidate.
func (b IETH) SetRKey(k uint32) { binary.BigEndian.PutUint32(b, k) }

// IETHFields holds every IETH field.
type IETHFields struct {
	RKey uint32
}

// Encode writes all fields of f into b.
func (b IETH) Encode(f *IETHFields) { b.SetRKey(f.RKey) }

// Decode returns all fields of b.
func (b IETH) Decode() IETHFields { return IETHFields{RKey: b.RKey()} }
