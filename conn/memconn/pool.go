package memconn

import (
	"net/netip"
	"sync"
	"time"
)

// packet is a datagram owned by the fabric: from Send's copy until Recv
// copies it out (or it is dropped), when it goes back to the pool. Exactly
// one place holds it at a time — the sender, the delay queue or an inbox.
type packet struct {
	buf      []byte // the datagram; its capacity is kept across uses
	src, dst netip.AddrPort
	ecn      uint8 // the ECN codepoint of its IP header (conn.ECNNotECT …)

	at  time.Time // delivery time, while on the delay queue
	seq uint64    // sending order, while on the delay queue

	dg     Datagram // what the filter is handed, reused to avoid an allocation
	inPool bool     // set while free, to catch a double put
}

// bufQuantum rounds buffer capacities up, so that a buffer freed by a
// small datagram serves most larger ones without growing.
const bufQuantum = 2048

// pool is a bounded free list of packets. A mutex-guarded stack rather
// than sync.Pool, because sync.Pool empties at garbage collection (and
// randomly under the race detector), which would make the steady state
// allocate.
type pool struct {
	mu   sync.Mutex
	free []*packet
	max  int // packets kept at most; extra ones are left to the GC
}

// get returns a packet whose buf has length size.
func (pl *pool) get(size int) *packet {
	var p *packet
	pl.mu.Lock()
	if n := len(pl.free); n > 0 {
		p = pl.free[n-1]
		pl.free[n-1] = nil
		pl.free = pl.free[:n-1]
	}
	pl.mu.Unlock()
	if p == nil {
		p = new(packet)
	}
	p.inPool = false
	if cap(p.buf) < size {
		p.buf = make([]byte, size, (size+bufQuantum-1)/bufQuantum*bufQuantum)
	}
	p.buf = p.buf[:size]
	return p
}

// put returns p to the pool. Putting a packet twice is a bug in the
// fabric, and panics.
func (pl *pool) put(p *packet) {
	if p.inPool {
		panic("memconn: packet returned to the pool twice")
	}
	p.inPool = true
	p.src, p.dst = netip.AddrPort{}, netip.AddrPort{}
	p.at, p.seq = time.Time{}, 0
	pl.mu.Lock()
	if len(pl.free) < pl.max {
		pl.free = append(pl.free, p)
	}
	pl.mu.Unlock()
}
