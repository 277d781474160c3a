// Package mem owns the memory a software RDMA device reaches: buffers
// allocated outside the Go heap, and the memory-region table that checks
// every local and remote access (the "TPT" of a hardware NIC).
//
// A region is registered with a protection-domain id, a byte slice and
// access rights, and is named by a Key: an index into the table plus an
// 8-bit tag that changes each time the index is reused, so a stale R_Key
// from a peer never reaches a newer region (doc/protocol.md §12.2). The region's
// address is the real virtual address of its first byte, as on hardware,
// so addresses and keys exchanged with C peers mean the same thing.
//
// A memory window (Window) has a slot and a key of its own; while bound,
// its slot holds an entry over the range of the region it is bound to, so
// the one key check covers regions and windows alike (doc/protocol.md
// §12.5).
//
// The data path calls Table.Acquire (local accesses, through L_Keys) and
// Table.AcquireRemote (through R_Keys, by a QP), which check key, PD, a
// window's QP, rights and bounds in the order rxe does (doc/protocol.md
// §12.3 steps 8 and 9) without locks or allocations, and return a Ref
// holding the region until Release. Table.Deregister and the unbinding of
// a window invalidate the key at once and then wait for the Refs still
// held, so memory may be unmapped, or a window rebound, as soon as they
// return.
//
// The package does not import internal/ib: the engine converts between
// the verbs types and the plain types here.
package mem
