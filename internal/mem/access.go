package mem

import (
	"strconv"
	"strings"
)

// Access is a set of memory-region access rights. The bits have the values
// of enum ibv_access_flags (ROCEV2.md §12.1), so the verbs layer converts
// with a plain type conversion; bits not named here are kept but never
// checked.
type Access uint32

// Access rights checked by Table.Acquire. Local read needs no right: verbs
// always allows it, so a gather passes need 0.
const (
	LocalWrite   Access = 0x1 // IBV_ACCESS_LOCAL_WRITE: scatter into the region
	RemoteWrite  Access = 0x2 // IBV_ACCESS_REMOTE_WRITE: RDMA WRITE target
	RemoteRead   Access = 0x4 // IBV_ACCESS_REMOTE_READ: RDMA READ source
	RemoteAtomic Access = 0x8 // IBV_ACCESS_REMOTE_ATOMIC: atomic target
)

var accessNames = [...]struct {
	bit  Access
	name string
}{
	{LocalWrite, "LOCAL_WRITE"},
	{RemoteWrite, "REMOTE_WRITE"},
	{RemoteRead, "REMOTE_READ"},
	{RemoteAtomic, "REMOTE_ATOMIC"},
}

// String returns the rights as libibverbs names joined by "|", for logs
// and test failures; other bits are shown in hex.
func (a Access) String() string {
	if a == 0 {
		return "0"
	}
	var parts []string
	for _, n := range accessNames {
		if a&n.bit != 0 {
			parts = append(parts, n.name)
			a &^= n.bit
		}
	}
	if a != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(a), 16))
	}
	return strings.Join(parts, "|")
}

// valid reports whether a obeys the verbs rule that a region writable or
// atomically modifiable by a peer is also locally writable (ROCEV2.md
// §12.1; ib_check_mr_access in the kernel).
func (a Access) valid() bool {
	return a&(RemoteWrite|RemoteAtomic) == 0 || a&LocalWrite != 0
}
