package wire

import "encoding/binary"

// AtomicAckETH is a view of the 8-byte Atomic Acknowledge Extended Transport
// Header (IBA 9.3.5.2), carried by ATOMIC ACKNOWLEDGE after the AETH.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               Original Remote Data (64 bits)                  |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type AtomicAckETH []byte

// AtomicAckETHSize is the length of the Atomic Acknowledge Extended Transport Header.
const AtomicAckETHSize = 8

// OrigData returns the value the target held before the atomic operation.
func (b AtomicAckETH) OrigData() uint64 { return binary.BigEndian.Uint64(b) }

// SetOrigData sets the original remote data.
func (b AtomicAckETH) SetOrigData(v uint64) { binary.BigEndian.PutUint64(b, v) }

// AtomicAckETHFields holds every AtomicAckETH field.
type AtomicAckETHFields struct {
	OrigData uint64
}

// Encode writes all fields of f into b.
func (b AtomicAckETH) Encode(f *AtomicAckETHFields) { b.SetOrigData(f.OrigData) }

// Decode returns all fields of b.
func (b AtomicAckETH) Decode() AtomicAckETHFields {
	return AtomicAckETHFields{OrigData: b.OrigData()}
}
