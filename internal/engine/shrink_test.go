package engine

import (
	"encoding/binary"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// TestQuietQPShrinks: a QP whose inbound ring grew for a burst of WRITEs
// and whose transmit batch grew for READ responses keeps both while
// shrinkQuiet has not passed, and then, with no traffic to run a turn,
// its timer gives both back their starting sizes. A burst after that is
// taken whole and in order again.
func TestQuietQPShrinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t)
		psn := 0
		// queue queues n packets from the peer at once, as a receive
		// loop queues a batch, and runs the QP's turns: one turn meets
		// them all. each fills packet i's headers and payload.
		queue := func(n int, op wire.Opcode, payload int, each func(i int, p wire.Packet)) {
			t.Helper()
			var ready []*QP
			r.dev.rxGate.Lock()
			for i := range n {
				f := wire.BTHFields{Opcode: op, PKey: defaultPKey, DestQP: r.qp.qpn, PSN: wire.PSN(psn), AckRequest: true}
				b := getBuf()
				p, err := wire.NewPacket(b.b[:], 0, &f, payload)
				if err != nil {
					t.Fatal(err)
				}
				each(i, p)
				ready = r.dev.enqueue(r.qp, &inPkt{p: p, buf: b}, ready)
			}
			r.dev.rxGate.Unlock()
			scheduleReady(ready)
			synctest.Wait()
		}
		va := mem.AddrOf(r.region)
		burst := func(n int) {
			t.Helper()
			queue(n, wire.RCWriteOnly, 4, func(_ int, p wire.Packet) {
				p.RETH().Encode(&wire.RETHFields{VA: va + uint64(psn%64)*4, RKey: uint32(r.key), DMALength: 4})
				binary.BigEndian.PutUint32(p.Payload(), uint32(psn))
				psn++
			})
			if got := r.respPSN(); got != wire.PSN(psn) {
				t.Fatalf("after a burst of %d WRITEs the responder expects PSN %d, want %d", n, got, psn)
			}
			for i := psn - 64; i < psn; i++ {
				if v := binary.BigEndian.Uint32(r.region[(i%64)*4:]); v != uint32(i) {
					t.Fatalf("the region holds %d where WRITE %d wrote", v, i)
				}
			}
		}
		sizes := func() (ring, batch int) {
			r.qp.mu.Lock()
			defer r.qp.mu.Unlock()
			return r.qp.inbound.Cap(), len(r.qp.xmit.msgs)
		}

		reads := func() { // 12 responses of 256 bytes, sent in one turn
			queue(3, wire.RCReadRequest, 0, func(_ int, p wire.Packet) {
				p.RETH().Encode(&wire.RETHFields{VA: va, RKey: uint32(r.key), DMALength: 1024})
				psn += 4
			})
		}
		burst(300)
		reads()
		if ring, batch := sizes(); ring <= inboundStart || batch <= xmitStart {
			t.Fatalf("after the bursts: ring %d, batch %d; the test wants both grown", ring, batch)
		}
		// READs keep coming, more often than the quiet period: the
		// batch they fill is in use and stays, while the ring, which
		// they do not fill, goes back to its start. (They come a little
		// after each quarter: the QP's shrink timer fires a quiet period
		// after a turn, at a quarter too, and a turn that finds the
		// receive gate held by this goroutine queueing leaves the ring
		// for another quiet period, by design.)
		for i := range 12 {
			time.Sleep(shrinkQuiet/4 + time.Millisecond)
			if _, batch := sizes(); batch <= xmitStart {
				t.Fatalf("READs %v apart: the batch shrank to %d before READs %d", shrinkQuiet/4, batch, i)
			}
			reads()
		}
		if ring, _ := sizes(); ring != inboundStart {
			t.Errorf("%v without a burst: the ring has %d slots, want %d", 3*shrinkQuiet, ring, inboundStart)
		}
		burst(300)
		time.Sleep(shrinkQuiet / 2)
		synctest.Wait()
		if ring, batch := sizes(); ring <= inboundStart || batch <= xmitStart {
			t.Fatalf("half a quiet period after the bursts: ring %d, batch %d, shrunk already", ring, batch)
		}
		time.Sleep(shrinkQuiet)
		synctest.Wait()
		if ring, batch := sizes(); ring != inboundStart || batch != xmitStart {
			t.Errorf("a quiet period after the bursts: ring %d, batch %d; want %d and %d", ring, batch, inboundStart, xmitStart)
		}
		burst(300)
		if ring, _ := sizes(); ring <= inboundStart {
			t.Errorf("a second burst left the ring at %d slots", ring)
		}
	})
}

// respPSN returns the PSN the responder expects next.
func (r *pktRig) respPSN() wire.PSN {
	r.qp.mu.Lock()
	defer r.qp.mu.Unlock()
	return r.qp.resp.psn
}
