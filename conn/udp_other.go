//go:build !linux

package conn

import (
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
)

// Off Linux (not a target, but the module must build) UDPBind receives
// through x/net's ReadBatch, one datagram per call, and allocates a
// source address per datagram. The socket keeps the system's defaults:
// the IPv4 Identification rule the ICRC relies on is Linux's.

func setSocketOptions(syscall.RawConn, bool) error { return nil }

// recvScratch is the ReadBatch state of a UDPBind, reused by every Recv.
type recvScratch struct {
	ms    []ipv4.Message
	bufs  [][1][]byte
	trunc []bool
}

func (r *recvScratch) init(size int) {
	r.ms = make([]ipv4.Message, size)
	r.bufs = make([][1][]byte, size)
	r.trunc = make([]bool, size)
	for i := range r.ms {
		r.ms[i].Buffers = r.bufs[i][:]
	}
}

func (r *recvScratch) read(b *UDPBind, msgs []Message) (int, error) {
	for i := range msgs {
		r.bufs[i][0] = msgs[i].Buf
	}
	n, err := b.pc.ReadBatch(r.ms[:len(msgs)], 0)
	for i := range msgs {
		r.bufs[i][0] = nil
	}
	if err != nil {
		return 0, err
	}
	for i := range n {
		m := &msgs[i]
		m.N = r.ms[i].N
		m.IPID, m.HasIPID = 0, false
		m.Addr = netip.AddrPort{}
		if ua, ok := r.ms[i].Addr.(*net.UDPAddr); ok {
			ap := ua.AddrPort()
			m.Addr = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
		r.trunc[i] = r.ms[i].Flags&msgTrunc != 0
	}
	return n, nil
}
