package engine

import "sync"

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
