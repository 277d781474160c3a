package ib

// QPN is a queue pair number (ibv_qp.qp_num). On the wire it is the 24-bit
// BTH.DestQP or DETH.SrcQP (doc/protocol.md §2, §3.1); goverbs hands out user QPNs
// from a random base above the reserved 0x0–0x10 (doc/protocol.md §1.5).
type QPN uint32

// LKey is a local memory key (ibv_mr.lkey): it names the memory region of a
// scatter/gather element (doc/protocol.md §12.2, §12.4). It is never on the wire.
type LKey uint32

// RKey is a remote memory key (ibv_mr.rkey): it travels in RETH and
// AtomicETH and names the target region of an RDMA or atomic operation,
// checked by the responder (doc/protocol.md §12.2, §12.3).
type RKey uint32
