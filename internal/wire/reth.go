package wire

import "encoding/binary"

// RETH is a view of the 16-byte RDMA Extended Transport Header (IBA 9.3.3),
// carried by RDMA WRITE FIRST/ONLY, RDMA READ REQUEST, FLUSH and ATOMIC WRITE.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Virtual Address (high 32 bits)               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Virtual Address (low 32 bits)                 |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             R_Key                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          DMA Length                           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// DMA Length is the length of the whole RDMA message, not of this packet.
type RETH []byte

// RETHSize is the length of the RDMA Extended Transport Header.
const RETHSize = 16

const (
	rethVA     = 0
	rethRKey   = 8
	rethDMALen = 12
)

// VA returns the remote virtual address.
func (b RETH) VA() uint64 { return binary.BigEndian.Uint64(b[rethVA:]) }

// RKey returns the remote key.
func (b RETH) RKey() uint32 { return binary.BigEndian.Uint32(b[rethRKey:]) }

// DMALength returns the length of the RDMA message in bytes.
func (b RETH) DMALength() uint32 { return binary.BigEndian.Uint32(b[rethDMALen:]) }

// SetVA sets the remote virtual address.
func (b RETH) SetVA(va uint64) { binary.BigEndian.PutUint64(b[rethVA:], va) }

// SetRKey sets the remote key.
func (b RETH) SetRKey(k uint32) { binary.BigEndian.PutUint32(b[rethRKey:], k) }

// SetDMALength sets the message length.
func (b RETH) SetDMALength(n uint32) { binary.BigEndian.PutUint32(b[rethDMALen:], n) }

// RETHFields holds every RETH field.
type RETHFields struct {
	VA        uint64
	RKey      uint32
	DMALength uint32
}

// Encode writes all fields of f into b.
func (b RETH) Encode(f *RETHFields) {
	b.SetVA(f.VA)
	b.SetRKey(f.RKey)
	b.SetDMALength(f.DMALength)
}

// Decode returns all fields of b.
func (b RETH) Decode() RETHFields {
	return RETHFields{VA: b.VA(), RKey: b.RKey(), DMALength: b.DMALength()}
}
