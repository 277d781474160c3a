package mem

import "errors"

// ErrInvalidSize is returned by Alloc for a size that is not positive or
// too large to round up to whole pages.
var ErrInvalidSize = errors.New("invalid buffer size")

// Buffer is memory for RDMA outside the Go heap: page-aligned, never
// moved or scanned by the garbage collector, backed by a memfd so it can
// later be shared with another process, locked in RAM when the memlock
// limit allows, and not inherited across fork.
//
// Free must be called explicitly, after every region on the buffer is
// deregistered: there is no finalizer, because a region may still point
// into the memory after the Buffer itself becomes unreachable. A Buffer's
// methods must not run concurrently with Free.
type Buffer struct {
	mem    []byte // the whole mapping, a multiple of the page size
	n      int    // length requested
	fd     int
	locked bool
}

// Bytes returns the buffer's memory, of the length passed to Alloc. It
// returns nil after Free.
func (b *Buffer) Bytes() []byte {
	if b.mem == nil {
		return nil
	}
	return b.mem[:b.n:b.n]
}

// Fd returns the memfd backing the buffer, for sharing it with another
// process; -1 after Free. The Buffer still owns it.
func (b *Buffer) Fd() int { return b.fd }

// Locked reports whether the memory is locked in RAM (mlock). Locking is
// best effort: without CAP_IPC_LOCK it fails beyond RLIMIT_MEMLOCK, and
// the memory then works the same but may be swapped out.
func (b *Buffer) Locked() bool { return b.locked }
