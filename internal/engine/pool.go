package engine

import (
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/conn"
)

// pktBufSize holds the largest RoCEv2 transport packet: 4096 bytes of
// payload at the largest path MTU, 44 bytes of headers, pad and ICRC.
const pktBufSize = 4096 + 256

// pktBuf is a pooled packet buffer. Whoever holds it frees it exactly once.
type pktBuf struct {
	b [pktBufSize]byte
}

var pktPool = sync.Pool{New: func() any { return new(pktBuf) }}

func getBuf() *pktBuf  { return pktPool.Get().(*pktBuf) }
func putBuf(b *pktBuf) { pktPool.Put(b) }

// rxBuf is a pooled receive buffer of a coalescing link
// (conn.CoalescedReceiver): one receive fills it with a run of packets,
// which wait in their QPs' inbound rings as views of it, so no packet is
// copied before the responder places its payload. The receive loop holds
// one reference while it queues the packets and each queued packet one
// more; whoever drops the last puts it back.
type rxBuf struct {
	b     [conn.MaxDatagram]byte
	refs  atomic.Int32
	inUse *atomic.Int32 // the receive loop's count of its buffers not put back
}

var rxPool = sync.Pool{New: func() any { return new(rxBuf) }}

// getRxBuf returns a buffer with the caller's reference, counted in inUse
// until it is put back.
func getRxBuf(inUse *atomic.Int32) *rxBuf {
	b := rxPool.Get().(*rxBuf)
	b.refs.Store(1)
	b.inUse = inUse
	inUse.Add(1)
	return b
}

func (b *rxBuf) ref() { b.refs.Add(1) }

func (b *rxBuf) unref() {
	switch n := b.refs.Add(-1); {
	case n == 0:
		b.inUse.Add(-1)
		b.inUse = nil
		rxPool.Put(b)
	case n < 0:
		panic("engine: receive buffer released twice")
	}
}
