package engine

import (
	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/wire"
)

// maxDatagram is the longest UD packet a device takes: a payload of the
// largest MTU (UD messages are one packet, doc/protocol.md §5.1) with
// its headers, pad and ICRC. A packet buffer holds it behind the GRH.
const maxDatagram = 4096 + 24 + 3 + wire.ICRCSize

// grhHopLimit is the TTL or hop limit written into a received datagram's
// GRH: a UDP socket does not report the one the datagram came with, so
// the GRH carries Linux's default, what goverbs itself sends with.
const grhHopLimit = 64

// datagram is how a packet of a GRH service waits in its QP's inbound
// ring: copied behind a wire.GRHSize area of a buffer of its own, which
// holds the network header the receive buffer will start with
// (doc/protocol.md §13.3), written here, where the datagram's addresses
// and IPv4 identification (env, as the ICRC check found them) and its ECN
// bits are known. admitsDatagram refused datagrams longer than maxDatagram.
func (d *Device) datagram(m *conn.Message, env *wire.Envelope) inPkt {
	b := getBuf()
	n := copy(b.b[wire.GRHSize:], m.Buf[:m.N])
	wire.PutGRH(b.b[:wire.GRHSize], env, n, m.ECN, grhHopLimit)
	return inPkt{p: wire.Packet(b.b[wire.GRHSize : wire.GRHSize+n]), buf: b}
}

// grh returns the network header a datagram made by datagram carries.
func (p *inPkt) grh() []byte { return p.buf.b[:wire.GRHSize] }
