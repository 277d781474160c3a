package wire

import "encoding/binary"

// An RC Acknowledge (a BTH and an AETH, no payload) differs from the
// previous ACK of its QP only in its PSN, syndrome and MSN, which are the
// last seven bytes its ICRC covers. The CRC is linear, so the ICRC of an
// ACK is that of the same ACK with those fields zero (its base, the same
// for every ACK a QP sends to one peer) plus, for each of the seven bytes,
// what the byte adds from its distance to the end: byte v followed by j
// zero bytes adds icrcTab[j][v] (doc/protocol.md §4). A responder seals
// an ACK with seven table lookups instead of a pass over its headers.

// ACKICRCBase returns the base of the ACK p, built for the envelope e:
// the ICRC of p with PSN, syndrome and MSN zero. p is not changed.
func (p Packet) ACKICRCBase(e *Envelope) uint32 {
	var b [BTHSize + AETHSize + ICRCSize]byte
	q := Packet(b[:copy(b[:], p)])
	clear(q[bthPSN:BTHSize])
	clear(q[BTHSize : BTHSize+AETHSize])
	return q.ComputeICRC(e)
}

// SealACK writes the ICRC of the ACK p from base (ACKICRCBase of an ACK
// of the same QP to the same peer) and p's PSN, syndrome and MSN.
func (p Packet) SealACK(base uint32) {
	t := &icrcTab
	psn, aeth := p[bthPSN:BTHSize], p[BTHSize:BTHSize+AETHSize]
	crc := base ^ t[6][psn[0]] ^ t[5][psn[1]] ^ t[4][psn[2]] ^
		t[3][aeth[0]] ^ t[2][aeth[1]] ^ t[1][aeth[2]] ^ t[0][aeth[3]]
	binary.LittleEndian.PutUint32(p[BTHSize+AETHSize:], crc)
}
