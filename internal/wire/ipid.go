package wire

import (
	"hash/crc32"
	"math/bits"
	"sync"
)

// A receiver on an ordinary UDP socket does not see the IPv4
// Identification, yet the ICRC covers it, and Linux rxe sends non-zero IDs
// (a per-destination counter). The CRC is linear, so the ID's share of the
// ICRC is a linear function of its 16 bits: ICRC(id) = ICRC(0) ⊕ L(id),
// where L depends only on how many bytes follow the ID field. Given a
// received trailer, the ID that makes it consistent — if one exists — is
// the solution of a 32×16 linear system over GF(2), which is solved once
// per packet length and cached.

// ipidSolver solves L(id) = t for one packet length.
type ipidSolver struct {
	col   [16]uint32    // L of each ID bit
	byNib [4][16]uint32 // L of each value of each of the ID's four nibbles, low first
	tmask [16]uint32    // ID bit b is the parity of t & tmask[b]
	ok    bool          // the 16 columns are independent (they are for CRC-32)
}

// ipidTail is the number of CRC input bytes after the IPv4 ID field for a
// transport packet of n bytes (without trailer): the rest of the IPv4
// header (14), UDP (8) and the packet.
func ipidTail(n int) int { return ipv4HeaderSize - 6 + udpHeaderSize + n }

var ipidSolvers sync.Map // tail length → *ipidSolver

func solverFor(tail int) *ipidSolver {
	if s, ok := ipidSolvers.Load(tail); ok {
		return s.(*ipidSolver)
	}
	s := newIPIDSolver(tail)
	ipidSolvers.Store(tail, s)
	return s
}

// zeroByte advances a raw (no init, no final XOR) reflected CRC-32 register
// over one zero byte.
func zeroByte(r uint32) uint32 { return crc32.IEEETable[byte(r)] ^ r>>8 }

// gf2 is a 32×32 matrix over GF(2): column i is the image of bit i.
type gf2 [32]uint32

func (m *gf2) apply(v uint32) (r uint32) {
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			r ^= m[i]
		}
	}
	return r
}

func (m *gf2) mul(n *gf2) (p gf2) { // p = m·n
	for i := range p {
		p[i] = m.apply(n[i])
	}
	return p
}

// shiftZeros returns the linear map that runs a raw register over k zero
// bytes, by repeated squaring of the one-byte map.
func shiftZeros(k int) gf2 {
	var step, acc gf2
	for i := range 32 {
		step[i] = zeroByte(1 << i)
		acc[i] = 1 << i
	}
	for ; k > 0; k >>= 1 {
		if k&1 != 0 {
			acc = acc.mul(&step)
		}
		step = step.mul(&step)
	}
	return acc
}

func newIPIDSolver(tail int) *ipidSolver {
	s := &ipidSolver{}
	shift := shiftZeros(tail)
	for b := range 16 {
		// Raw CRC of the two ID bytes (big-endian) with only bit b set.
		id := uint16(1) << b
		r := uint32(0)
		for _, c := range [2]byte{byte(id >> 8), byte(id)} {
			r = crc32.IEEETable[byte(r)^c] ^ r>>8
		}
		s.col[b] = shift.apply(r)
	}
	// L is linear: the L of a nibble value is that of the value without
	// its lowest set bit, with that bit's column added.
	for k := range s.byNib {
		t := &s.byNib[k]
		for v := 1; v < 16; v++ {
			t[v] = t[v&(v-1)] ^ s.col[4*k+bits.TrailingZeros(uint(v))]
		}
	}
	// Gaussian elimination on the rows (bit positions of t): keep, for each
	// pivot, which combination of original rows it is.
	var rowVal [32]uint16 // row i of the 32×16 matrix
	for i := range 32 {
		for b := range 16 {
			if s.col[b]>>i&1 != 0 {
				rowVal[i] |= 1 << b
			}
		}
	}
	var pivots [16]uint16 // reduced row with leading bit b
	var combo [16]uint32  // which original rows were XORed into it
	var have uint16
	n := 0
	for i := 0; i < 32 && n < 16; i++ {
		v, c := rowVal[i], uint32(1)<<i
		for b := 15; b >= 0 && v != 0; b-- {
			if v>>b&1 == 0 {
				continue
			}
			if have>>b&1 == 0 {
				pivots[b], combo[b], have = v, c, have|1<<b
				n++
				v = 0
				break
			}
			v ^= pivots[b]
			c ^= combo[b]
		}
	}
	if n < 16 {
		return s
	}
	// Back-substitute: with the pivots of lower bits already reduced to
	// single bits, clearing the lower bits of pivot b leaves only bit b,
	// and then bit b of the ID is the parity of the t bits in combo[b].
	for b := range 16 {
		for c := range b {
			if pivots[b]>>c&1 != 0 {
				pivots[b] ^= pivots[c]
				combo[b] ^= combo[c]
			}
		}
	}
	s.tmask, s.ok = combo, true
	return s
}

// solve returns the ID with L(id) = t, if there is one.
func (s *ipidSolver) solve(t uint32) (uint16, bool) {
	if !s.ok {
		return 0, false
	}
	var id uint16
	for b := range 16 {
		if parity(s.tmask[b] & t) {
			id |= 1 << b
		}
	}
	// The system is overdetermined (32 equations, 16 unknowns): check.
	return id, s.delta(id) == t
}

func parity(v uint32) bool {
	v ^= v >> 16
	v ^= v >> 8
	v ^= v >> 4
	v ^= v >> 2
	v ^= v >> 1
	return v&1 != 0
}

// CheckICRCAnyIPID checks the ICRC of an IPv4 packet whose Identification
// the receiver could not see: it returns the ID that makes the trailer
// match, or ErrBadICRC if no ID does. e.IPID is ignored. Such a check
// detects corruption with 16 fewer bits of strength than a full ICRC check
// (a random error passes with probability 2^-16 instead of 2^-32).
func (p Packet) CheckICRCAnyIPID(e *Envelope) (uint16, error) {
	return p.CheckICRCGuessIPID(e, 0, 0)
}
