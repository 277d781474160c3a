package memconn

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/conn"
)

// Bind is an endpoint of a Network, the in-memory counterpart of a UDP
// socket; it implements conn.Bind. Received datagrams wait in a bounded
// inbox (Options.InboxSize) until Recv copies them out.
type Bind struct {
	net  *Network
	addr netip.AddrPort
	ecn  atomic.Uint32 // the ECN codepoint its datagrams carry (SetECN)

	// ready holds one token while the inbox may be non-empty. Recv waits
	// on it and on done, channels rather than a mutex, so that a
	// goroutine in Recv counts as durably blocked inside a synctest
	// bubble and virtual time can advance.
	ready chan struct{}
	done  chan struct{} // closed by Close

	mu     sync.Mutex // guards ring, head, count and closed
	ring   []*packet  // the inbox, a circular buffer of count packets from head
	head   int
	count  int
	closed bool
}

var (
	_ conn.Bind      = (*Bind)(nil)
	_ conn.ECNSetter = (*Bind)(nil)
)

// SetECN makes the bind's later datagrams carry the ECN codepoint ecn;
// those ECN-capable are subject to Impairments.Mark. A receiver sees the
// codepoint in conn.Message.ECN.
func (b *Bind) SetECN(ecn uint8) error {
	b.ecn.Store(uint32(ecn & 3))
	return nil
}

func newBind(n *Network, addr netip.AddrPort) *Bind {
	return &Bind{
		net:   n,
		addr:  addr,
		ready: make(chan struct{}, 1),
		done:  make(chan struct{}),
		ring:  make([]*packet, n.inboxSize),
	}
}

// LocalAddr returns the address the bind listens on.
func (b *Bind) LocalAddr() netip.AddrPort { return b.addr }

// BatchSize returns the batch size the bind advertises
// (Options.BatchSize); Send and Recv take batches of any size.
func (b *Bind) BatchSize() int { return b.net.batchSize }

// Send copies each datagram into the fabric, addressed from the bind's
// address, and returns how many it took. Like a UDP socket it succeeds
// whether or not anyone listens at the destination (such datagrams are
// dropped and counted). It stops with an error at a datagram over
// MaxDatagramSize or without a valid destination (an IP and a non-zero
// port, as for a UDP socket).
func (b *Bind) Send(msgs []conn.Message) (int, error) {
	select {
	case <-b.done:
		return 0, net.ErrClosed
	default:
	}
	return b.net.send(b.addr, uint8(b.ecn.Load()), msgs)
}

// Recv blocks until at least one datagram is in the inbox and copies up
// to len(msgs) of them into the msgs' buffers, setting N, Addr (the
// sender's address), IPID 0 and HasIPID (a DF-marked datagram from a
// Linux socket carries Identification 0). A datagram larger than its
// buffer is dropped (Stats.Dropped.Truncated), as UDPBind does. After
// Close, Recv returns net.ErrClosed.
func (b *Bind) Recv(msgs []conn.Message) (int, error) {
	for {
		n, more, err := b.take(msgs)
		if err != nil {
			return 0, err
		}
		if n > 0 || len(msgs) == 0 {
			if more {
				b.signal() // pass the token on to another receiver
			}
			return n, nil
		}
		select {
		case <-b.ready:
		case <-b.done:
		}
	}
}

// take moves datagrams from the inbox into msgs and reports whether some
// are left.
func (b *Bind) take(msgs []conn.Message) (n int, more bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, false, net.ErrClosed
	}
	for n < len(msgs) && b.count > 0 {
		p := b.ring[b.head]
		b.ring[b.head] = nil
		b.head = (b.head + 1) % len(b.ring)
		b.count--
		m := &msgs[n]
		if len(p.buf) > len(m.Buf) {
			b.net.stats.inc(cDropTruncated)
			b.net.pool.put(p)
			continue
		}
		m.N = copy(m.Buf, p.buf)
		m.Addr = p.src
		m.IPID, m.HasIPID = 0, true
		m.ECN = p.ecn
		b.net.pool.put(p)
		n++
	}
	return n, b.count > 0, nil
}

// enqueue puts a routed datagram into the inbox, or drops and counts it
// when the inbox is full (as a NIC ring would) or the bind has closed.
func (b *Bind) enqueue(p *packet) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.net.dropNoReceiver(p)
		return
	}
	if b.count == len(b.ring) {
		b.mu.Unlock()
		b.net.stats.inc(cDropOverflow)
		b.net.pool.put(p)
		return
	}
	b.ring[(b.head+b.count)%len(b.ring)] = p
	b.count++
	b.mu.Unlock()
	b.net.stats.inc(cDelivered)
	b.signal()
}

// signal leaves a token in ready unless one is there already.
func (b *Bind) signal() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// Close unregisters the bind, discards the datagrams waiting in its inbox
// and wakes every Recv, which returns net.ErrClosed. Datagrams sent to
// its address afterwards are dropped as having no receiver. Close is
// idempotent.
func (b *Bind) Close() error {
	b.net.unregister(b)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	for b.count > 0 {
		b.net.pool.put(b.ring[b.head])
		b.ring[b.head] = nil
		b.head = (b.head + 1) % len(b.ring)
		b.count--
	}
	b.mu.Unlock()
	close(b.done)
	return nil
}
