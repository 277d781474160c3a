package mem

import "unsafe"

// AddrOf returns the virtual address of b[0]. Memory regions are named by
// this address, as on hardware, so a peer's VA means the same bytes it
// would on any RDMA NIC. It returns 0 for a nil slice; for an empty
// non-nil slice the address is that of its underlying array.
func AddrOf(b []byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}
