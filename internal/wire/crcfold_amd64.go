package wire

// fold4x512 advances the register reg (no final XOR) over b, a multiple
// of 64 bytes and at least 256: it folds b, with reg xored into its first
// four bytes, four 512-bit chains at a time down to a 128-bit remainder,
// which has the same CRC as everything folded into it (IBA's CRC is
// linear: folding multiplies by powers of x modulo the polynomial, which
// keeps the residue), and reduces that to the register with carry-less
// multiplications too (crcfold_amd64.s).
//
//go:noescape
func fold4x512(reg uint32, b []byte) uint32

// cpuid and xgetbv0 read the processor's feature flags and the register
// state the operating system saves.
func cpuid(leaf, sub uint32) (a, b, c, d uint32)
func xgetbv0() uint32

// foldOK reports whether the processor and the operating system support
// what fold4x512 uses: AVX-512 Foundation with VPCLMULQDQ, AVX and
// PCLMULQDQ, and the saving of the ZMM and opmask state.
var foldOK = func() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	const pclmul, osxsave, avx = 1 << 1, 1 << 27, 1 << 28
	if c1&(pclmul|osxsave|avx) != pclmul|osxsave|avx {
		return false
	}
	// XCR0: SSE, AVX, opmask, ZMM_Hi256 and Hi16_ZMM state enabled.
	if xgetbv0()&0xe6 != 0xe6 {
		return false
	}
	_, b7, c7, _ := cpuid(7, 0)
	const avx512f, vpclmulqdq = 1 << 16, 1 << 10
	return b7&avx512f != 0 && c7&vpclmulqdq != 0
}()
