package engine

import (
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// The receive loop checks the QP state in accept() and commits the packet
// to qp.inbound afterwards, without qp.mu. A Modify(RESET) in between
// (reset() drops the inbound ring under mu, sets peer=nil) leaves a packet
// queued on a RESET QP; the next turn handles it and dereferences the nil
// peer in xmitBatch.queue. This test reproduces the state the race leaves.
func TestPacketQueuedAcrossReset(t *testing.T) {
	r := newFuzzRig(t)
	if err := r.qp.Modify(&QPAttr{State: ib.QPStateReset}, ib.QPAttrState); err != nil {
		t.Fatal(err)
	}
	// What recvLoop does after accept() returned qp (state was RTR/RTS then).
	b := getBuf()
	p, _ := wire.NewPacket(b.b[:], 0, &wire.BTHFields{Opcode: wire.RCSendOnly, PKey: 0xffff, PSN: 5, AckRequest: true, DestQP: r.qp.qpn}, 4)
	slot := r.qp.inbound.Reserve()
	*slot = inPkt{p: p, buf: b}
	r.qp.inbound.Commit()
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("turn panicked: %v", v)
		}
	}()
	r.qp.task.schedule()
}

// TestResetWhileReceiving: a peer keeps sending while the QP is reset and
// reconnected (bounded to 300 reconnects); nothing may panic.
func TestResetWhileReceiving(t *testing.T) {
	r := newFuzzRig(t)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		msgs := make([]conn.Message, 32)
		for i := range msgs {
			p, _ := wire.NewPacket(make([]byte, 256), 0, &wire.BTHFields{Opcode: wire.RCSendOnly, PKey: 0xffff, PSN: 0x1234, AckRequest: true, DestQP: r.qp.qpn}, 4)
			p.SealICRC(&r.env)
			msgs[i] = conn.Message{Buf: p, Addr: netip.AddrPortFrom(r.env.Dst, 4791)}
		}
		for !stop.Load() {
			r.peer.Send(msgs)
		}
	}()
	for range 300 {
		r.connect(t)
	}
	stop.Store(true)
	<-done
}
