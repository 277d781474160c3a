// Package wire reads and writes RoCEv2 transport packets: the InfiniBand
// Base Transport Header, the extended transport headers, payload, pad and the
// invariant CRC, exactly as Linux Soft-RoCE (rdma_rxe) and RoCE NICs put them
// in UDP datagrams to port 4791.
//
// Every header is a view: a named []byte with accessors that read and write
// the spec's fields in place (big-endian). A [Packet] is a view over a whole
// transport packet; [Packet.Validate] checks it against the opcode table before
// any extended header is read, so bytes from the network can be parsed without
// panics or allocations. [NewPacket] lays out a packet in a caller buffer for
// in-place construction, and the ICRC functions compute the CRC over the
// masked IP/UDP/BTH pseudo-header given as explicit [Envelope] fields.
//
// The package imports only the standard library. Logic that walks received
// buffers and acts on them lives in the engine, not here.
//
// References: InfiniBand Architecture Specification Volume 1 (IBA), chapter 9
// (transport layer), and Annex A17 (RoCEv2).
package wire
