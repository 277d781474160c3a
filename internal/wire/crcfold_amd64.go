package wire

// fold4x512 folds b (a multiple of 64 bytes, at least 256) with the
// register reg xored into its first four bytes down to a 128-bit
// remainder in rem, four 512-bit chains at a time (crcfold_amd64.s).
//
//go:noescape
func fold4x512(reg uint32, b []byte, rem *[16]byte)

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
