// Package conn is the link layer of goverbs: it moves RoCEv2 datagrams
// (InfiniBand transport packets in UDP, port 4791) between the engine and
// the network in batches over caller-owned buffers.
//
// Two links implement Bind: UDPBind, a real UDP socket with batched
// sendmmsg/recvmmsg (this package), and the in-memory fabric of
// conn/memconn, which carries the same datagrams between devices of one
// process with programmable impairments. The engine is written against
// Bind only, so the same code runs on both (doc/design.md §3).
package conn

import "net/netip"

// RoCEv2Port is the UDP destination port IANA assigned to RoCEv2. Devices
// listen on it by default; tests bind port 0 to get an ephemeral port.
const RoCEv2Port = 4791

// Message is one datagram in a batch. Buffers are caller-owned: a Bind
// never keeps a reference to Buf after Send or Recv returns, and never
// replaces it, so callers may track their buffers by index.
type Message struct {
	// Buf is, on send, the datagram (its len is the size); on receive,
	// the buffer to fill, whose full len is the capacity.
	Buf []byte
	// N is, on receive, the number of bytes received into Buf.
	N int
	// Addr is, on send, the destination; on receive, the source. IPv4
	// addresses are always plain (never IPv4-mapped IPv6).
	Addr netip.AddrPort
	// IPID is the IPv4 Identification of a received datagram, valid when
	// HasIPID is set. The RoCEv2 ICRC covers it, so a link that knows it
	// reports it: memconn always does (it is 0, as for a DF-marked send
	// from a Linux socket); a UDP socket cannot see it (HasIPID false),
	// and the receiver assumes the 0 that Linux writes into DF datagrams.
	IPID    uint16
	HasIPID bool
}

// Bind is a bound datagram endpoint that sends and receives in batches.
// Implementations are safe for concurrent use; concurrent Recv calls each
// get distinct datagrams.
type Bind interface {
	// Recv blocks until at least one datagram arrived, fills msgs[0:n]
	// and returns n. After Close it returns net.ErrClosed.
	Recv(msgs []Message) (n int, err error)
	// Send sends msgs in order (each to its own Addr); returns how many
	// were sent. It stops at the first datagram that fails and returns
	// its error.
	Send(msgs []Message) (n int, err error)
	// BatchSize is the batch size the implementation handles per call;
	// larger batches work but are split.
	BatchSize() int
	// LocalAddr is the bound address (with the actual port when port 0
	// was asked for).
	LocalAddr() netip.AddrPort
	// Close is idempotent and unblocks Recv.
	Close() error
}
