package mem

import (
	"errors"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// Alloc returns a buffer of n bytes, rounded up to whole pages in memory.
//
// The memory is a memfd mapped MAP_SHARED, so the same pages can be mapped
// by a peer process given the fd. The memfd is sealed against shrinking
// and growing: a peer holding the fd could otherwise truncate it, and
// every access of ours past the new end would be a SIGBUS. mlock is best
// effort, so unprivileged users with a small RLIMIT_MEMLOCK still get
// memory. MADV_DONTFORK, as libibverbs applies to registered memory,
// keeps a child created by fork from inheriting the mapping, so only this
// process and peers given the fd on purpose can reach it.
func Alloc(n int) (*Buffer, error) {
	page := unix.Getpagesize()
	if n <= 0 || n > math.MaxInt-page {
		return nil, ErrInvalidSize
	}
	size := (n + page - 1) &^ (page - 1)

	fd, err := unix.MemfdCreate("goverbs-buffer", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	mem, err := mapMemfd(fd, size)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	b := &Buffer{mem: mem, n: n, fd: fd}
	// Neither call is needed for correctness inside one process, so only
	// an mlock failure that signals a bug (EINVAL) fails the allocation.
	_ = unix.Madvise(mem, unix.MADV_DONTFORK)
	switch err := unix.Mlock(mem); {
	case err == nil:
		b.locked = true
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.ENOMEM), errors.Is(err, unix.EAGAIN):
		// Over RLIMIT_MEMLOCK (ENOMEM, or EPERM with a zero limit) or
		// short of lockable memory (EAGAIN): use it unlocked.
	default:
		b.Free()
		return nil, os.NewSyscallError("mlock", err)
	}
	return b, nil
}

// mapMemfd sizes and seals the memfd and maps it read-write, shared.
func mapMemfd(fd, size int) ([]byte, error) {
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return nil, os.NewSyscallError("ftruncate", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW); err != nil {
		return nil, os.NewSyscallError("fcntl F_ADD_SEALS", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return mem, nil
}

// Free unmaps the memory and closes the memfd. Later calls do nothing and
// return nil. Any slice of the memory still in use faults after Free, so
// deregister the buffer's regions first.
func (b *Buffer) Free() error {
	if b.mem == nil {
		return nil
	}
	// munlock is implied by munmap.
	err := unix.Munmap(b.mem)
	if cerr := unix.Close(b.fd); err == nil && cerr != nil {
		err = os.NewSyscallError("close", cerr)
	} else if err != nil {
		err = os.NewSyscallError("munmap", err)
	}
	b.mem, b.fd, b.locked = nil, -1, false
	return err
}
