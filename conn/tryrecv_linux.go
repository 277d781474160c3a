//go:build linux

package conn

import (
	"net"
	"sync"
)

// SetRecvGate implements SharedReceiver.
func (b *UDPBind) SetRecvGate(g *sync.Mutex) { b.gate.Store(g) }

// TryRecvCoalesced implements SharedReceiver. Like the receive it shares
// with, it asks for one datagram after a try that found none (see
// recvmmsg), and it feeds the bind's adaptive polling (pollWait, guarded
// by the gate) what it receives, so that the goroutine in RecvCoalesced
// goes on polling while traffic flows, whoever takes it, rather than
// sleeping and making every datagram's sender wake it (doc/design.md §3).
func (b *UDPBind) TryRecvCoalesced(msgs []Message) (int, error) {
	if len(msgs) == 0 || b.gate.Load() == nil {
		return 0, nil
	}
	b.tryMu.Lock()
	defer b.tryMu.Unlock()
	if b.closed.Load() {
		return 0, net.ErrClosed
	}
	r := &b.trx
	k := min(len(msgs), udpBatchSize)
	if r.dry {
		k = 1
	}
	n, err := r.readCoalesced(b, msgs[:k])
	if err != nil {
		return 0, b.ioErr(err)
	}
	r.dry = n == 0
	if n = b.dropTruncated(msgs[:n], r.trunc); n > 0 {
		raceAcquire()
	}
	return n, nil
}

// initTry readies the scratch of a TryRecvCoalesced.
func (r *recvScratch) initTry(size int) {
	r.init(size)
	r.once = true
}
