package wire

import "hash/crc32"

// updateIEEE advances crc, a CRC-32 (IEEE) in hash/crc32's form (final XOR
// applied), over b, as crc32.Update(crc, crc32.IEEETable, b) does.
//
// Where the CPU can, long inputs are folded four 64-byte blocks at a time
// (crcfold_amd64.s): hash/crc32 folds one block per step, a chain of
// dependent carry-less multiplications whose latency, not the multiplier,
// bounds it; four independent chains keep the multiplier busy. The ICRC
// runs over every payload byte on both sides of a transfer, so this is a
// tenth of a sender's and a receiver's CPU time at 64 KiB (issue 10's
// profiles).
func updateIEEE(crc uint32, b []byte) uint32 {
	if foldOK && len(b) >= foldMin {
		n := len(b) &^ (foldBlock - 1)
		crc = ^foldRemainder(^crc, b[:n])
		b = b[n:]
		if len(b) == 0 {
			return crc
		}
	}
	return crc32.Update(crc, crc32.IEEETable, b)
}

// foldBlock is the unit the folding consumes; foldMin the shortest input
// worth folding: four blocks fill the four chains once, and below about
// 512 bytes hash/crc32 is as fast (BenchmarkUpdateIEEE).
const (
	foldBlock = 64
	foldMin   = 512
)

// foldRemainder advances the register reg (no final XOR) over b, whose
// length is a multiple of foldBlock and at least 4·foldBlock. The folding
// leaves a 128-bit remainder with the same CRC as everything folded into
// it, as a message of its own behind a zero register (IBA's CRC is
// linear: folding multiplies by powers of x modulo the polynomial, which
// keeps the residue); the table-driven loop reduces those 16 bytes.
func foldRemainder(reg uint32, b []byte) uint32 {
	var rem [16]byte
	fold4x512(reg, b, &rem)
	return slicing8(0, rem[:])
}

// Folding constants for the reflected IEEE polynomial, as the carry-less
// multiplications want them: a 128-bit lane folded forward by d bits is
// lane.lo·foldK(d+32) ⊕ lane.hi·foldK(d−32) (the folding of Intel's "Fast
// CRC Computation for Generic Polynomials Using PCLMULQDQ", reflected
// form). foldK(n) is x^n mod P, bit-reflected as a 64-bit value and
// shifted left once, the alignment the reflected product needs.
func foldK(n int) uint64 {
	const poly = 0x04C11DB7 // IEEE 802.3, normal form
	r := uint32(1)
	for range n {
		if r&0x80000000 != 0 {
			r = r<<1 ^ poly
		} else {
			r <<= 1
		}
	}
	return reverse64(uint64(r)<<32) << 1
}

func reverse64(v uint64) (r uint64) {
	for range 64 {
		r = r<<1 | v&1
		v >>= 1
	}
	return r
}

// foldConsts are the constants fold4x512 loads: per distance (2048 bits,
// four lanes ahead; 512 bits, one block; 128 bits, one lane) the pair
// (lo, hi) for each of the four lanes of a 512-bit register.
var foldConsts = func() (c [3][8]uint64) {
	for i, d := range []int{2048, 512, 128} {
		for l := range 4 {
			c[i][2*l], c[i][2*l+1] = foldK(d+32), foldK(d-32)
		}
	}
	return c
}()
