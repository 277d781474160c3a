package engine

import (
	"net/netip"
	"testing"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/wire"
)

// planBind stands in for a link that coalesces sends: it plans runs of
// the whole batch (ID = index) until a Send "finds" the device cannot
// segment, and records what it sent with the ID each datagram carries.
type planBind struct {
	conn.Bind      // not called
	gso       bool // planning runs
	failAfter int  // the first Send sends this many, then ErrReplan; < 0: never
	sent      []sentPkt
}

type sentPkt struct {
	p  wire.Packet
	id uint16
}

func (b *planBind) PlanIPIDs(msgs []conn.Message) {
	for i := range msgs {
		msgs[i].IPID, msgs[i].HasIPID = 0, true
		if b.gso {
			msgs[i].IPID = uint16(i)
		}
	}
}

func (b *planBind) Send(msgs []conn.Message) (int, error) {
	n := len(msgs)
	if b.failAfter >= 0 {
		n, b.failAfter, b.gso = b.failAfter, -1, false
	}
	for _, m := range msgs[:n] {
		b.sent = append(b.sent, sentPkt{append(wire.Packet(nil), m.Buf...), m.IPID})
	}
	if n < len(msgs) {
		return n, conn.ErrReplan
	}
	return n, nil
}

// TestXmitResealsForPlannedIDs: each packet leaves with the ICRC for the
// ID the link planned for it, also when the link stops coalescing halfway
// through a batch and the rest is planned again.
func TestXmitResealsForPlannedIDs(t *testing.T) {
	for _, failAfter := range []int{-1, 0, 3} {
		b := &planBind{gso: true, failAfter: failAfter}
		qp := &QP{dev: &Device{bind: b, planner: b}}
		qp.env = wire.Envelope{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
			FlagsFragment: wire.FlagDontFragment, SrcPort: 4791, DstPort: 4791}
		peer := netip.AddrPortFrom(qp.env.Dst, 4791)
		qp.peer.Store(&peer)
		qp.xmit.init(16)
		const pkts = 10
		for i := range pkts {
			p := qp.xmit.start(qp, &wire.BTHFields{Opcode: wire.RCWriteMiddle, PKey: 0xffff, PSN: wire.PSN(i), DestQP: 0x11}, 1024)
			p.Payload()[0] = byte(i)
			qp.xmit.queue(qp, p)
		}
		qp.xmit.flush(qp)
		if len(b.sent) != pkts {
			t.Fatalf("failAfter %d: %d packets sent, want %d", failAfter, len(b.sent), pkts)
		}
		for i, s := range b.sent {
			want := uint16(i) // planned as one run
			if failAfter >= 0 && i >= failAfter {
				want = 0 // replanned without coalescing
			}
			e := qp.env
			e.IPID = s.id
			if s.id != want || s.p.CheckICRC(&e) != nil || s.p.Payload()[0] != byte(i) {
				t.Errorf("failAfter %d: packet %d left with ID %d (want %d), ICRC for it: %v",
					failAfter, i, s.id, want, s.p.CheckICRC(&e))
			}
		}
		if got := qp.dev.counters[SendErr].Load(); got != 0 {
			t.Errorf("failAfter %d: SendErr = %d", failAfter, got)
		}
	}
}
