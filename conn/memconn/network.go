// Package memconn is an in-memory RoCEv2 fabric: binds of one process
// exchange the same UDP datagrams a socket would carry, through memory.
//
// It is not a mock. The engine runs on it unchanged, which makes
// two-device tests fast and hermetic, and the fabric can misbehave on
// purpose — loss, duplication, reordering, delay and bit corruption drawn
// from a seeded PCG so that a run is reproducible, plus a deterministic
// filter hook for tests that need one particular packet dropped,
// duplicated or altered.
//
// Delays use runtime timers and Recv blocks on channels, so a fabric
// created inside a testing/synctest bubble runs on the bubble's virtual
// clock: retransmission timeouts of seconds take no wall time. Create the
// Network inside the bubble for that; objects made outside it are not
// part of the bubble.
package memconn

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goverbs/goverbs/conn"
)

const (
	// DefaultInboxSize is the default capacity of a bind's receive queue,
	// in datagrams: a NIC ring's worth. Beyond it datagrams are dropped
	// and counted (Stats.Dropped.Overflow), as a full ring would.
	DefaultInboxSize = 4096
	// DefaultBatchSize is the default batch size a bind advertises, the
	// same as a UDP socket's, so the engine sees the same batching.
	DefaultBatchSize = 64
	// MaxDatagramSize is the largest datagram Send accepts: the largest
	// UDP payload IPv4 can carry (65535 − 20 − 8), for both families so
	// that a test behaves alike on either.
	MaxDatagramSize = 65507

	firstEphemeralPort = 49152
)

// Pre-built errors keep failure returns on the data path allocation-free.
var (
	errTooBig      = errors.New("memconn: datagram larger than MaxDatagramSize")
	errInvalidAddr = errors.New("memconn: invalid destination address")
	errNetClosed   = errors.New("memconn: network closed")
)

// Options configures a Network. The zero value is a perfect fabric with
// the default inbox and batch sizes.
type Options struct {
	// Impairments are in force from the start; see SetImpairments.
	Impairments Impairments
	// InboxSize is the capacity of each bind's receive queue, in
	// datagrams; 0 means DefaultInboxSize.
	InboxSize int
	// BatchSize is what binds report from BatchSize; 0 means
	// DefaultBatchSize. Send and Recv accept batches of any size.
	BatchSize int
}

// Network is an in-memory fabric connecting the binds listening on it.
// It is safe for concurrent use.
type Network struct {
	inboxSize int
	batchSize int

	mu       sync.RWMutex // guards binds, nextPort, closed
	binds    map[netip.AddrPort]*Bind
	nextPort uint16
	closed   bool

	impairer impairer   // random impairments and their PCG
	delayed  delayQueue // datagrams waiting for their delivery time
	filter   atomic.Pointer[func(*Datagram) Verdict]
	pool     pool
	stats    counters
}

// NewNetwork returns an empty fabric.
func NewNetwork(opts Options) *Network {
	n := &Network{
		inboxSize: opts.InboxSize,
		batchSize: opts.BatchSize,
		binds:     make(map[netip.AddrPort]*Bind),
		nextPort:  firstEphemeralPort,
	}
	if n.inboxSize <= 0 {
		n.inboxSize = DefaultInboxSize
	}
	if n.batchSize <= 0 {
		n.batchSize = DefaultBatchSize
	}
	n.pool.max = 4 * n.inboxSize
	n.delayed.deliver = n.route
	n.impairer.set(opts.Impairments)
	return n
}

// Listen registers a bind at addr. The address must be a concrete IP
// (IPv4-mapped addresses are taken as IPv4); port 0 picks a free port.
// It fails if another bind holds the address.
func (n *Network) Listen(addr netip.AddrPort) (*Bind, error) {
	a := addr.Addr().Unmap()
	if !a.IsValid() || a.IsUnspecified() {
		return nil, fmt.Errorf("memconn: listen %v: need a concrete IP address", addr)
	}
	addr = netip.AddrPortFrom(a, addr.Port())
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, fmt.Errorf("memconn: listen %v: %w", addr, errNetClosed)
	}
	if addr.Port() == 0 {
		p, ok := n.freePort(a)
		if !ok {
			return nil, fmt.Errorf("memconn: listen %v: no free port", addr)
		}
		addr = netip.AddrPortFrom(a, p)
	}
	if _, taken := n.binds[addr]; taken {
		return nil, fmt.Errorf("memconn: listen %v: address already in use", addr)
	}
	b := newBind(n, addr)
	n.binds[addr] = b
	return b, nil
}

// freePort returns an unused port of a from the ephemeral range, going
// round it from where the last search stopped. Called with n.mu held.
func (n *Network) freePort(a netip.Addr) (uint16, bool) {
	const span = 65536 - firstEphemeralPort
	for range span {
		p := n.nextPort
		n.nextPort++
		if n.nextPort == 0 {
			n.nextPort = firstEphemeralPort
		}
		if _, taken := n.binds[netip.AddrPortFrom(a, p)]; !taken {
			return p, true
		}
	}
	return 0, false
}

// unregister removes b from the address table if it still holds its
// address.
func (n *Network) unregister(b *Bind) {
	n.mu.Lock()
	if n.binds[b.addr] == b {
		delete(n.binds, b.addr)
	}
	n.mu.Unlock()
}

// Close closes every bind and discards the datagrams still delayed, so
// that no timer of the fabric fires afterwards. Listen then fails.
// Close is idempotent.
func (n *Network) Close() error {
	n.mu.Lock()
	n.closed = true
	binds := make([]*Bind, 0, len(n.binds))
	for _, b := range n.binds {
		binds = append(binds, b)
	}
	n.mu.Unlock()
	for _, b := range binds {
		b.Close()
	}
	n.delayed.stop(n.dropNoReceiver)
	return nil
}

// SetFilter installs f as the fabric's filter, or removes it when f is
// nil. The filter sees every datagram sent, before the random
// impairments, in the sending goroutine (concurrently when several
// goroutines send). It may change the bytes of d.Data in place, reslice
// it or replace it; what d.Data holds when it returns is what travels.
// Its verdict drops the datagram, duplicates it, or lets it through.
func (n *Network) SetFilter(f func(d *Datagram) Verdict) {
	if f == nil {
		n.filter.Store(nil)
		return
	}
	n.filter.Store(&f)
}

// SetImpairments replaces the random impairments. It also reseeds the
// PCG from imp.Seed, so the decisions that follow depend only on imp and
// on the sequence of datagrams sent from then on.
func (n *Network) SetImpairments(imp Impairments) { n.impairer.set(imp) }

// Impairments returns the impairments in force.
func (n *Network) Impairments() Impairments { return n.impairer.get() }

// Stats returns a snapshot of the fabric's counters.
func (n *Network) Stats() Stats { return n.stats.snapshot() }

// send carries msgs from src. It is Bind.Send's body: each datagram is
// copied into a pooled packet, filtered, impaired, then delivered now or
// queued for later.
func (n *Network) send(src netip.AddrPort, ecn uint8, msgs []conn.Message) (int, error) {
	for i := range msgs {
		m := &msgs[i]
		if m.Size() > MaxDatagramSize {
			return i, errTooBig
		}
		dst := netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port())
		if !dst.Addr().IsValid() || dst.Port() == 0 {
			return i, errInvalidAddr
		}
		n.stats.inc(cSent)
		p := n.pool.get(m.Size())
		p.buf = m.AppendDatagram(p.buf[:0])
		p.src, p.dst, p.ecn = src, dst, ecn
		copies := 1
		if f := n.filter.Load(); f != nil {
			switch p.filter(*f) {
			case Drop:
				n.stats.inc(cDropFilter)
				n.pool.put(p)
				continue
			case Duplicate:
				copies = 2
				n.stats.inc(cDuplicated)
			}
		}
		n.dispatch(p, copies)
	}
	return len(msgs), nil
}

// dispatch applies the random impairments to p (and the copies of it the
// filter asked for) and hands them to delivery.
func (n *Network) dispatch(p *packet, copies int) {
	f := n.impairer.decide(len(p.buf), p.ecn != conn.ECNNotECT)
	if f.lose {
		n.stats.add(cDropLoss, uint64(copies))
		n.pool.put(p)
		return
	}
	if f.bit >= 0 {
		p.buf[f.bit/8] ^= 1 << (f.bit % 8)
		n.stats.inc(cCorrupted)
	}
	if f.dup {
		copies++
		n.stats.inc(cDuplicated)
	}
	if f.reorder {
		n.stats.inc(cReordered)
	}
	if f.mark {
		p.ecn = conn.ECNCE
		n.stats.inc(cMarked)
	}
	// Copies go after the original, so that with equal delays the
	// original arrives first, as with a real duplicating switch.
	for range copies - 1 {
		q := n.pool.get(len(p.buf))
		copy(q.buf, p.buf)
		q.src, q.dst, q.ecn = p.src, p.dst, p.ecn
		n.deliverAfter(p, f.delay)
		p = q
	}
	n.deliverAfter(p, f.delay)
}

// deliverAfter routes p now, or after d on the delay queue.
func (n *Network) deliverAfter(p *packet, d time.Duration) {
	if d <= 0 {
		n.route(p)
		return
	}
	n.delayed.push(p, d)
}

// route puts p into the inbox of the bind at its destination, or drops
// and counts it when there is none.
func (n *Network) route(p *packet) {
	n.mu.RLock()
	b := n.binds[p.dst]
	n.mu.RUnlock()
	if b == nil {
		n.dropNoReceiver(p)
		return
	}
	b.enqueue(p)
}

// dropNoReceiver drops p for want of a bind to take it.
func (n *Network) dropNoReceiver(p *packet) {
	n.stats.inc(cDropNoReceiver)
	n.pool.put(p)
}
