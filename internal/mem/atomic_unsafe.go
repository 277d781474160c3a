package mem

import (
	"sync/atomic"
	"unsafe"
)

// Atomics run as real CPU atomics on the target word, so they are atomic
// also against the application's own sync/atomic accesses and against
// other processes mapping the same memfd, which rxe's device-wide lock
// (doc/protocol.md §9, IBV_ATOMIC_HCA) is not. The word is in host byte order,
// as the spec requires of the responder.

// Aligned8 reports whether b is a valid atomic target: exactly 8 bytes at
// an 8-byte-aligned address (doc/protocol.md §9). The engine checks the VA
// before it acquires the target; Acquire with length 8 then yields a
// slice that passes.
func Aligned8(b []byte) bool {
	return len(b) == 8 && AddrOf(b)%8 == 0
}

// word returns b as a *uint64. A misaligned word would be a split-lock
// atomic on amd64 (a SIGBUS where split-lock detection is on) and a fault
// on arm64, so it panics instead: the caller skipped the alignment check,
// which is a bug, not bad input.
func word(b []byte) *uint64 {
	if !Aligned8(b) {
		panic("mem: atomic target is not 8 aligned bytes")
	}
	return (*uint64)(unsafe.Pointer(unsafe.SliceData(b)))
}

// CompareAndSwap performs IBA COMPARE_SWAP on the 8 bytes of b: if they
// equal compare they become swap. It returns the value before the
// operation whether or not it swapped, which is what the responder sends
// back. It panics unless Aligned8(b).
func CompareAndSwap(b []byte, compare, swap uint64) (old uint64) {
	p := word(b)
	for {
		old = atomic.LoadUint64(p)
		// A differing value is a valid result as read: the operation
		// takes effect at this load.
		if old != compare || atomic.CompareAndSwapUint64(p, old, swap) {
			return old
		}
	}
}

// FetchAndAdd performs IBA FETCH_ADD on the 8 bytes of b: it adds add
// modulo 2^64 and returns the value before the addition. It panics unless
// Aligned8(b).
func FetchAndAdd(b []byte, add uint64) (old uint64) {
	return atomic.AddUint64(word(b), add) - add
}
