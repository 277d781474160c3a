package mem

// Place copies src into dst, as copy does, at full speed whatever the two
// addresses: it is how a received payload, which starts 12 or 28 bytes
// into its packet (doc/protocol.md §2), lands in memory. Go's copy on
// amd64 moves 2 KiB and more with REP MOVSQ when the destination is
// 16-byte aligned and the processor is an Intel one with fast strings, and
// that ran at less than half speed from a source not aligned alike: 4 KiB
// payloads 14–17 GB/s against 33–38 aligned (pinned, 2026-11-26). Pieces
// under 2 KiB take its vector loop instead, which does not care (32–33
// GB/s from the same sources). Elsewhere the pieces cost a call or two.
// Overlapping slices are moved whole, by copy: pieces would not be a
// memmove.
func Place(dst, src []byte) int {
	n := min(len(dst), len(src))
	d, s := AddrOf(dst), AddrOf(src)
	if n < placePiece || (d^s)&15 == 0 || d < s+uint64(n) && s < d+uint64(n) {
		return copy(dst, src)
	}
	for off := 0; off < n; off += placePiece {
		copy(dst[off:min(off+placePiece, n)], src[off:])
	}
	return n
}

// placePiece is the largest piece Place copies at a time: below the 2 KiB
// from which copy turns to REP MOVSQ, and a multiple of 64 so that every
// piece after the first starts as the first did within its cache line.
const placePiece = 2048 - 64
