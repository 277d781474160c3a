package wire

import "encoding/binary"

// DETH is a view of the 8-byte Datagram Extended Transport Header
// (IBA 9.3.2), carried by every UD packet.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Q_Key                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Reserved    |                    SrcQP                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type DETH []byte

// DETHSize is the length of the Datagram Extended Transport Header.
const DETHSize = 8

const (
	dethQKey  = 0
	dethResv  = 4
	dethSrcQP = 5
)

// QKey returns the queue key.
func (b DETH) QKey() uint32 { return binary.BigEndian.Uint32(b[dethQKey:]) }

// SrcQP returns the sender's 24-bit QP number.
func (b DETH) SrcQP() uint32 { return get24(b[dethSrcQP:]) }

// SetQKey sets the queue key.
func (b DETH) SetQKey(k uint32) { binary.BigEndian.PutUint32(b[dethQKey:], k) }

// SetSrcQP sets the sender's QP number; higher bits of qpn are dropped.
func (b DETH) SetSrcQP(qpn uint32) { put24(b[dethSrcQP:], qpn) }

// DETHFields holds every DETH field.
type DETHFields struct {
	QKey  uint32
	SrcQP uint32
}

// Encode writes all fields of f into b; the reserved byte becomes zero.
func (b DETH) Encode(f *DETHFields) {
	b.SetQKey(f.QKey)
	b[dethResv] = 0
	b.SetSrcQP(f.SrcQP)
}

// Decode returns all fields of b.
func (b DETH) Decode() DETHFields { return DETHFields{QKey: b.QKey(), SrcQP: b.SrcQP()} }
