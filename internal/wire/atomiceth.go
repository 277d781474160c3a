package wire

import "encoding/binary"

// AtomicETH is a view of the 28-byte Atomic Extended Transport Header
// (IBA 9.3.3.3), carried by COMPARE SWAP and FETCH ADD requests. Its 64-bit
// fields are not 8-byte aligned within the packet.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Virtual Address (64 bits)                     |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             R_Key                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Swap (CMP SWAP) / Add (FETCH ADD) Data        |
//	+                          (64 bits)                            +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Compare Data (64 bits, CMP SWAP only)         |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// For FETCH ADD the compare field is meaningless and must be ignored on
// receive (newer rxe does not zero it).
type AtomicETH []byte

// AtomicETHSize is the length of the Atomic Extended Transport Header.
const AtomicETHSize = 28

const (
	atomicVA      = 0
	atomicRKey    = 8
	atomicSwapAdd = 12
	atomicCompare = 20
)

// VA returns the remote virtual address of the 8-byte target.
func (b AtomicETH) VA() uint64 { return binary.BigEndian.Uint64(b[atomicVA:]) }

// RKey returns the remote key.
func (b AtomicETH) RKey() uint32 { return binary.BigEndian.Uint32(b[atomicRKey:]) }

// SwapAdd returns the swap value (COMPARE SWAP) or the addend (FETCH ADD).
func (b AtomicETH) SwapAdd() uint64 { return binary.BigEndian.Uint64(b[atomicSwapAdd:]) }

// Compare returns the compare value (COMPARE SWAP only).
func (b AtomicETH) Compare() uint64 { return binary.BigEndian.Uint64(b[atomicCompare:]) }

// SetVA sets the remote virtual address.
func (b AtomicETH) SetVA(va uint64) { binary.BigEndian.PutUint64(b[atomicVA:], va) }

// SetRKey sets the remote key.
func (b AtomicETH) SetRKey(k uint32) { binary.BigEndian.PutUint32(b[atomicRKey:], k) }

// SetSwapAdd sets the swap value or addend.
func (b AtomicETH) SetSwapAdd(v uint64) { binary.BigEndian.PutUint64(b[atomicSwapAdd:], v) }

// SetCompare sets the compare value.
func (b AtomicETH) SetCompare(v uint64) { binary.BigEndian.PutUint64(b[atomicCompare:], v) }

// AtomicETHFields holds every AtomicETH field.
type AtomicETHFields struct {
	VA      uint64
	RKey    uint32
	SwapAdd uint64
	Compare uint64
}

// Encode writes all fields of f into b.
func (b AtomicETH) Encode(f *AtomicETHFields) {
	b.SetVA(f.VA)
	b.SetRKey(f.RKey)
	b.SetSwapAdd(f.SwapAdd)
	b.SetCompare(f.Compare)
}

// Decode returns all fields of b.
func (b AtomicETH) Decode() AtomicETHFields {
	return AtomicETHFields{VA: b.VA(), RKey: b.RKey(), SwapAdd: b.SwapAdd(), Compare: b.Compare()}
}
