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

import (
	"errors"
	"net/netip"
	"sync"
)

// RoCEv2Port is the UDP destination port IANA assigned to RoCEv2. Devices
// listen on it by default; tests bind port 0 to get an ephemeral port.
const RoCEv2Port = 4791

// Message is one datagram in a batch. Buffers are caller-owned: a Bind
// never keeps a reference to Buf, Body or Tail after Send or Recv
// returns, and never replaces them, so callers may track their buffers by
// index.
type Message struct {
	// Buf is, on send, the datagram, or its first part when Body or Tail
	// is set; on receive, the buffer to fill, whose full len is the
	// capacity.
	Buf []byte
	// Body and Tail are, on send, the rest of the datagram: it is Buf,
	// then Body, then Tail, which the link gathers as it sends, so that
	// a payload goes out from where it lies (a memory region) without a
	// copy into Buf. Either may be empty. Receives ignore them.
	Body, Tail []byte
	// N is, on receive, the number of bytes received into Buf.
	N int
	// Addr is, on send, the destination; on receive, the source. IPv4
	// addresses are always plain (never IPv4-mapped IPv6).
	Addr netip.AddrPort
	// IPID is the IPv4 Identification of the datagram. The RoCEv2 ICRC
	// covers it, so the sender must seal each packet for the ID it will
	// carry and the receiver check it with the ID it came with.
	//
	// On send, with HasIPID set, it is the ID the caller sealed the
	// datagram for, as an IPIDPlanner planned it; a Bind that coalesces
	// datagrams (UDP GSO) coalesces only planned ones. Without HasIPID the
	// datagram is sent alone (ID 0 over IPv4 from a Linux socket).
	//
	// On receive it is valid when HasIPID is set: memconn always knows it
	// (0, as for a DF-marked send from a Linux socket); a UDP socket cannot
	// see it (HasIPID false) and leaves its best guess here: 0, which Linux
	// writes into DF datagrams sent alone, or a datagram's index in a
	// coalesced receive (UDP GRO), which a GSO send numbered from 0.
	IPID    uint16
	HasIPID bool
	// Seg is, on a receive by CoalescedReceiver.RecvCoalesced, the size
	// of each datagram when Buf[:N] holds a run of them laid end to end
	// (UDP GRO): all Seg bytes but a shorter last. 0 means one datagram.
	// Datagram returns them one by one.
	Seg int
	// Flow is, on send, the flow the datagram leaves by: 0 for the bind's
	// own socket, otherwise what FlowOpener.OpenFlow returned for Addr;
	// the datagram was sealed for the source address that call returned.
	// Ignored on receive and by links without flows.
	Flow int
	// ECN is, on receive, the ECN codepoint of the datagram's IP header
	// (ECNNotECT … ECNCE) where the link reports it: memconn does, a UDP
	// socket does not (0). Ignored on send: ECNSetter sets a link's.
	ECN uint8
}

// ECN codepoints of the IP header's two low TOS / traffic class bits
// (RFC 3168).
const (
	ECNNotECT uint8 = 0 // not ECN-capable
	ECNECT1   uint8 = 1 // ECN-capable transport (1)
	ECNECT0   uint8 = 2 // ECN-capable transport (0), what RoCEv2 senders use
	ECNCE     uint8 = 3 // congestion experienced, set by a congested hop
)

// ECNSetter is implemented by a Bind that can send its datagrams with an
// ECN codepoint: UDPBind (IP_TOS / IPV6_TCLASS on the socket) and memconn.
type ECNSetter interface {
	// SetECN makes every later datagram carry codepoint ecn.
	SetECN(ecn uint8) error
}

// Size returns the length of the datagram m sends: Buf, Body and Tail.
func (m *Message) Size() int { return len(m.Buf) + len(m.Body) + len(m.Tail) }

// AppendDatagram appends the datagram m sends, its parts laid end to end,
// to dst and returns the extended slice (for links and observers that
// need it in one piece).
func (m *Message) AppendDatagram(dst []byte) []byte {
	return append(append(append(dst, m.Buf...), m.Body...), m.Tail...)
}

// Datagrams returns how many datagrams a received m holds (see Seg).
func (m *Message) Datagrams() int {
	if m.Seg <= 0 || m.Seg >= m.N {
		return 1
	}
	return (m.N + m.Seg - 1) / m.Seg
}

// Datagram returns datagram i of a received m as a Message of its own
// whose Buf and N are the datagram, a view of m.Buf. Over IPv4 its IPID
// is m.IPID + i: a coalesced receive numbers the run as the GSO send that
// sent it did (UDPBind.PlanIPIDs).
func (m *Message) Datagram(i int) Message {
	if m.Datagrams() == 1 {
		return Message{Buf: m.Buf[:m.N], N: m.N, Addr: m.Addr, IPID: m.IPID, HasIPID: m.HasIPID, ECN: m.ECN}
	}
	off := i * m.Seg
	end := min(off+m.Seg, m.N)
	d := Message{Buf: m.Buf[off:end], N: end - off, Addr: m.Addr, IPID: m.IPID, HasIPID: m.HasIPID, ECN: m.ECN}
	if m.Addr.Addr().Is4() {
		d.IPID += uint16(i)
	}
	return d
}

// MaxDatagram is the largest UDP datagram, coalesced or not: the buffer
// size RecvCoalesced needs.
const MaxDatagram = 1 << 16

// CoalescedReceiver is implemented by a Bind whose receives can coalesce
// datagrams (UDPBind with UDP GRO). A caller that takes runs of datagrams
// in buffers of its own saves the copy Recv then makes of each datagram
// out of the bind's coalescing buffers.
type CoalescedReceiver interface {
	// Coalesces reports whether receives coalesce; when they do not,
	// Recv is the better call (it fills smaller buffers, more per call).
	Coalesces() bool
	// RecvCoalesced is Recv into buffers of at least MaxDatagram bytes,
	// each of which may receive a run of datagrams (Message.Seg).
	RecvCoalesced(msgs []Message) (n int, err error)
}

// RunLimiter is implemented by a Bind that coalesces sends (UDPBind's
// segmentation offload): consecutive datagrams of one size to one
// address, the last maybe shorter, leave as one send, a run. RunLimit
// returns how many datagrams of size bytes one run holds now; 1 when the
// bind coalesces none. A sender that can choose where a burst ends ends it
// where a run does: a run cut in two costs a second send.
type RunLimiter interface {
	RunLimit(size int) int
}

// SharedReceiver is implemented by a CoalescedReceiver whose receiving
// another goroutine can share (UDPBind on Linux): besides the goroutine
// in RecvCoalesced, which may wait, one that has reason to spin — a
// program waiting for a completion on the one processor the receiving
// goroutine would need (doc/design.md §4) — takes what the socket has
// ready without waiting. The two take turns under a gate, a mutex of the
// caller's that each holds while it receives and hands on what it
// received, so that datagrams handed on stay in the order they came.
type SharedReceiver interface {
	CoalescedReceiver
	// SetRecvGate sets the gate, before the first receive. From then on
	// Recv and RecvCoalesced are called with g held and return with it,
	// whatever it returns; it lets go of g while it waits for
	// datagrams, polling or asleep.
	SetRecvGate(g *sync.Mutex)
	// TryRecvCoalesced is RecvCoalesced without waiting: n is 0 when no
	// datagram is ready, and always when no gate is set. The caller
	// holds the gate.
	TryRecvCoalesced(msgs []Message) (n int, err error)
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

// IPIDPlanner is implemented by a Bind whose sends may give IPv4 datagrams
// Identifications other than 0: UDPBind with segmentation offload (GSO)
// sends a run of equal-size datagrams to one address as one, and the
// kernel numbers the segments 0, 1, 2, …; a flow's (FlowOpener) count on
// from where its socket is. A caller that seals checksums
// over the ID (the RoCEv2 ICRC) plans a batch, reseals each datagram for
// the ID planned, and sends the batch unchanged.
type IPIDPlanner interface {
	// PlanIPIDs sets IPID and HasIPID of every message to the ID its
	// datagram will carry when msgs is passed to Send as it is.
	PlanIPIDs(msgs []Message)
}

// FlowOpener is implemented by a Bind that can send to a peer from a
// socket connected to it, which spares the kernel a route lookup on
// every send (UDPBind on Linux; doc/design.md §3). A flow's datagrams
// leave from a source port of their own, so the caller seals them for the
// address OpenFlow returns, marks them with the flow (Message.Flow), and
// plans their IPv4 IDs (IPIDPlanner): a connected socket numbers its
// datagrams from a start of its own.
type FlowOpener interface {
	// OpenFlow readies a flow to dst, or finds the one open already, and
	// returns it with the source address its datagrams carry. Flow 0
	// means none (sends to dst go from LocalAddr as before): the link
	// may decline, for one, when peers could not tell the flow's
	// datagrams from another device's.
	OpenFlow(dst netip.AddrPort) (flow int, src netip.AddrPort)
	// RecheckFlow has flow learn its count again before its next send.
	// The kernel can use an ID without saying so — a datagram that a
	// local queue dropped after numbering it fails with ENOBUFS, which
	// UDP does not report unless asked (IP_RECVERR) — and a peer that
	// checks the ICRC against the ID on the wire (rxe, a RoCE NIC) then
	// drops, unseen, every datagram the flow sends: a caller whose peer
	// stops answering calls it.
	RecheckFlow(flow int)
}

// ErrReplan is returned by Send when the plan of the remaining messages no
// longer holds: the bind stopped coalescing (the device turned out not to
// support it) after they were planned, or another Send used one of their
// flows in between. The count returned says how many
// were sent; plan the rest again, reseal and send them.
var ErrReplan = errors.New("conn: IPv4 ID plan out of date, plan the batch again")
