package engine

import (
	"testing"

	"github.com/goverbs/goverbs/internal/wire"
)

// TestInboundBounded: what a peer can make a QP hold is bounded. Packets
// queue in the QP's inbound ring only up to inboundDepth, whatever the
// peer sends while the QP's turn is behind; the rest are dropped and
// counted (drop_rx_overflow), and their buffers go back to the pool. The
// other per-QP state a peer drives has fixed sizes: the responder's
// resources (max_dest_rd_atomic ≤ MaxQPRdAtomic, refused above at modify),
// one READ stream with the READs behind it waiting in the same ring, and
// the receive queue the owner posts (doc/protocol.md §1.6).
func TestInboundBounded(t *testing.T) {
	r := newFuzzRig(t)
	p, _ := wire.NewPacket(make([]byte, 64), 0, &wire.BTHFields{Opcode: wire.RCSendOnly, PKey: defaultPKey, DestQP: r.qp.qpn}, 0)
	const sent = inboundDepth + 1000
	before := r.dev.Counters()
	var ready []*QP
	for range sent {
		b := getBuf()
		n := copy(b.b[:], p)
		ready = r.dev.enqueue(r.qp, inPkt{p: wire.Packet(b.b[:n]), buf: b}, ready)
	}
	if n := r.qp.inbound.Len(); n != inboundDepth {
		t.Errorf("inbound ring holds %d packets, want its depth %d", n, inboundDepth)
	}
	after := r.dev.Counters()
	if d := after.Get(DropRxOverflow) - before.Get(DropRxOverflow); d != sent-inboundDepth {
		t.Errorf("drop_rx_overflow +%d, want %d", d, sent-inboundDepth)
	}
	if len(ready) != 1 || ready[0] != r.qp {
		t.Errorf("ready list %v, want the QP once", ready)
	}
	r.qp.mu.Lock()
	r.qp.dropInbound()
	r.qp.mu.Unlock()
	if r.qp.inbound.Len() != 0 {
		t.Error("the ring did not drain")
	}
}
