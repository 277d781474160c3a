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
		crc = ^fold4x512(^crc, b[:n])
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

// foldConsts are the constants fold4x512 folds with: per distance (2048 bits,
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

// barrettConsts are the constants that reduce the folding's 128-bit
// remainder to the 32-bit register (fold4x512's last steps, the reduction
// of Intel's paper above), in the order fold4x512 loads them: foldK(64),
// which folds 64 bits down to 32; the polynomial and the Barrett quotient
// ⌊x⁶⁴/P⌋, each as 33 bits reflected; and a mask of the low 32 bits.
var barrettConsts = [6]uint64{foldK(64), 0, reverse33(ieeePoly33), reverse33(barrettQuotient()), 0xffffffff, 0}

// ieeePoly33 is the IEEE 802.3 polynomial with its x³² term.
const ieeePoly33 = 1<<32 | 0x04C11DB7

// barrettQuotient returns ⌊x⁶⁴/P⌋ for the IEEE polynomial P, a polynomial
// of degree 32, by long division. Only the dividend's bits from x³² up
// decide the quotient's bits, so the remainder is kept shifted down by 32.
func barrettQuotient() (q uint64) {
	r := uint64(1) << 32 // x⁶⁴
	for bit := 32; bit >= 0; bit-- {
		if r>>bit&1 != 0 {
			q |= 1 << bit
			r ^= ieeePoly33 >> (32 - bit)
		}
	}
	return q
}

// reverse33 reverses the low 33 bits of v.
func reverse33(v uint64) uint64 { return reverse64(v) >> 31 }
