package verbs_test

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/conn"
)

// pollBind is one end of a link of two in-process binds that share their
// receiving (conn.SharedReceiver) as a UDPBind does, with no system
// calls: what one end sends is ready at the other at once, for a
// Device.Progress (CQ.Wait's) or the receive loop to take. Datagrams are
// copied in and out, as the kernel copies them, and arrive with IPv4 ID
// 0, as memconn's do. It lets a benchmark measure what the engine alone
// costs, a latency test's round trip or a stream's bytes.
type pollBind struct {
	addr netip.AddrPort
	peer *pollBind
	gate *sync.Mutex

	sends atomic.Int64 // Send calls: the engine's flushes

	mu     sync.Mutex
	ready  [][]byte // datagrams to receive, oldest first
	spare  [][]byte // buffers for them
	closed bool
	wake   chan struct{} // a token when ready gets a datagram or the bind closes
}

// newPollLink returns the two ends of a link.
func newPollLink() (a, b *pollBind) {
	a = &pollBind{addr: netip.MustParseAddrPort("10.0.0.1:4791"), wake: make(chan struct{}, 1)}
	b = &pollBind{addr: netip.MustParseAddrPort("10.0.0.2:4791"), wake: make(chan struct{}, 1)}
	a.peer, b.peer = b, a
	return a, b
}

func (b *pollBind) LocalAddr() netip.AddrPort { return b.addr }
func (b *pollBind) BatchSize() int            { return 64 }
func (b *pollBind) Coalesces() bool           { return true }
func (b *pollBind) SetRecvGate(g *sync.Mutex) { b.gate = g }

// Send hands each datagram to the peer end, whatever its address.
func (b *pollBind) Send(msgs []conn.Message) (int, error) {
	b.sends.Add(1)
	p := b.peer
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return len(msgs), nil // dropped, as by a socket nobody reads
	}
	for _, m := range msgs {
		var buf []byte
		if n := len(p.spare); n > 0 {
			buf, p.spare = p.spare[n-1], p.spare[:n-1]
		}
		p.ready = append(p.ready, m.AppendDatagram(buf[:0]))
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return len(msgs), nil
}

// TryRecvCoalesced takes what is ready, one datagram a message.
func (b *pollBind) TryRecvCoalesced(msgs []conn.Message) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, net.ErrClosed
	}
	n := min(len(msgs), len(b.ready))
	for i, d := range b.ready[:n] {
		m := &msgs[i]
		m.N = copy(m.Buf, d)
		m.Addr, m.IPID, m.HasIPID, m.Seg, m.ECN = b.peer.addr, 0, true, 0, 0
		b.spare = append(b.spare, d)
	}
	b.ready = b.ready[:copy(b.ready, b.ready[n:])]
	return n, nil
}

// RecvCoalesced waits, with the gate let go of, until a datagram is ready.
func (b *pollBind) RecvCoalesced(msgs []conn.Message) (int, error) {
	for {
		n, err := b.TryRecvCoalesced(msgs)
		if n > 0 || err != nil {
			return n, err
		}
		b.gate.Unlock()
		<-b.wake
		b.gate.Lock()
	}
}

// Recv is RecvCoalesced; the engine receives from a link that coalesces
// with RecvCoalesced only.
func (b *pollBind) Recv(msgs []conn.Message) (int, error) { return b.RecvCoalesced(msgs) }

func (b *pollBind) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return nil
}
