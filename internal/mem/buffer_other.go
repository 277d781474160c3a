//go:build !linux

package mem

import "errors"

// Alloc needs memfd_create, which only Linux has; elsewhere it fails, and
// regions can still be registered on ordinary byte slices.
func Alloc(n int) (*Buffer, error) {
	return nil, errors.ErrUnsupported
}

// Free does nothing: Alloc never succeeds on this system.
func (b *Buffer) Free() error { return nil }
