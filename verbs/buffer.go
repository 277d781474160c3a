package verbs

import (
	"github.com/goverbs/goverbs/internal/mem"
)

// Buffer is page-aligned memory outside the Go heap for RDMA buffers:
// never moved or scanned by the garbage collector, backed by a memfd (so
// it can be shared with another process), locked in RAM where the memlock
// limit allows, and not inherited by child processes.
//
// A Buffer must be closed explicitly, after the MRs on its memory are
// closed: a region still registered on it would point at unmapped memory.
type Buffer struct {
	b *mem.Buffer
}

// AllocBuffer returns n bytes of page-aligned memory outside the Go heap.
func AllocBuffer(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, errorf("alloc buffer", "%w: %d bytes", ErrInvalidArgument, n)
	}
	b, err := mem.Alloc(n)
	if err != nil {
		return nil, errorf("alloc buffer", "%d bytes: %w", n, err)
	}
	return &Buffer{b: b}, nil
}

// Bytes returns the memory, n bytes as asked of AllocBuffer; nil once the
// Buffer is closed.
func (b *Buffer) Bytes() []byte { return b.b.Bytes() }

// Fd returns the memfd backing the memory, for sharing it with another
// process, or -1 once the Buffer is closed. The Buffer still owns it.
func (b *Buffer) Fd() int { return b.b.Fd() }

// Locked reports whether the memory is locked in RAM (mlock), which is
// best effort: beyond RLIMIT_MEMLOCK the memory works the same but may be
// swapped out.
func (b *Buffer) Locked() bool { return b.b.Locked() }

// Close unmaps the memory and closes the memfd; slices of the memory
// still in use fault afterwards. Closing it again returns nil.
func (b *Buffer) Close() error {
	if err := b.b.Free(); err != nil {
		return errorf("free buffer", "%w", err)
	}
	return nil
}
