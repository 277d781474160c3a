package wire

import (
	"encoding/binary"
	"sync/atomic"
)

// A sender whose datagrams leave with non-zero IPv4 Identifications (UDP
// segmentation offload numbers the segments of one send 0, 1, 2, …) seals
// each packet for ID 0 and then moves the trailer to the ID it will carry:
// the CRC is linear, so ICRC(id) = ICRC(0) ⊕ L(id) with L the per-length
// map of ipid.go. A receiver that knows which ID a packet most likely
// carries (its index in a coalesced receive) checks that one first, for the
// price of a few XORs, before it solves for an unknown ID.

// solverCacheLen bounds the packet lengths whose solvers live in a flat
// table (RoCEv2 packets are at most 4 KiB of payload plus headers); longer
// ones, which only garbage from the network has, use the shared map.
const solverCacheLen = 1 << 13

// solverTable caches the solver of each transport packet length (BTH
// through pad, without trailer): a lock-free load on the data path, where
// the map would box the key.
var solverTable [solverCacheLen]atomic.Pointer[ipidSolver]

// solverForLen returns the solver for a transport packet of n bytes
// without trailer.
func solverForLen(n int) *ipidSolver {
	if n < 0 || n >= solverCacheLen {
		return solverFor(ipidTail(n))
	}
	if s := solverTable[n].Load(); s != nil {
		return s
	}
	s := solverFor(ipidTail(n))
	solverTable[n].Store(s)
	return s
}

// delta returns L(id): the ICRC change between ID 0 and id, the L of its
// four nibbles. (A loop over its bits, each column masked in without a
// branch, took 15–20 ns a call, and a sender reseals every packet of a
// GSO run; tables by byte, 2 KiB a solver, would let garbage of every
// length from the network pin 16 MiB of them.)
func (s *ipidSolver) delta(id uint16) uint32 {
	t := &s.byNib
	return t[0][id&15] ^ t[1][id>>4&15] ^ t[2][id>>8&15] ^ t[3][id>>12]
}

// ResealIPID moves the trailer of p, sealed for an IPv4 datagram with
// Identification from, to the ICRC for the same datagram with
// Identification to, without reading the packet again. It is the sender's
// half of UDP segmentation offload; p must be at least a BTH and trailer
// long and carried over IPv4 (IPv6 has no Identification in the ICRC).
func (p Packet) ResealIPID(from, to uint16) { p.ResealIPIDElided(from, to, 0) }

// ResealIPIDElided is ResealIPID for the head of a packet (NewPacketHead)
// whose elided payload bytes are not in p.
func (p Packet) ResealIPIDElided(from, to uint16, elided int) {
	if from == to || len(p) < BTHSize+ICRCSize {
		return
	}
	s := solverForLen(len(p) - ICRCSize + elided)
	t := p[len(p)-ICRCSize:]
	d := s.delta(to)
	if from != 0 { // a sender seals for ID 0 (L(0) = 0)
		d ^= s.delta(from)
	}
	binary.LittleEndian.PutUint32(t, binary.LittleEndian.Uint32(t)^d)
}

// CheckICRCGuessIPID checks the ICRC of an IPv4 packet whose Identification
// the receiver could not see but can guess: it computes the ICRC once, for
// ID 0, accepts guess or alt (or 0) by comparing the difference with
// L(guess) and L(alt), and otherwise solves for the ID as
// [Packet.CheckICRCAnyIPID] does, which costs more (BenchmarkCheckICRCGuessIPID).
// It returns the ID that makes the trailer match, or
// ErrBadICRC. e.IPID is ignored.
func (p Packet) CheckICRCGuessIPID(e *Envelope, guess, alt uint16) (uint16, error) {
	if len(p) < BTHSize+ICRCSize || !e.IPv4() {
		return 0, ErrBadICRC
	}
	t := icrcWithID(e, 0, p[:len(p)-ICRCSize]) ^ p.ICRC()
	if t == 0 {
		return 0, nil
	}
	s := solverForLen(len(p) - ICRCSize)
	if guess != 0 && s.delta(guess) == t {
		return guess, nil
	}
	if alt != 0 && alt != guess && s.delta(alt) == t {
		return alt, nil
	}
	id, ok := s.solve(t)
	if !ok {
		return 0, ErrBadICRC
	}
	return id, nil
}
