package engine

import (
	"bytes"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
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
		b.sent = append(b.sent, sentPkt{m.AppendDatagram(nil), m.IPID})
	}
	if n < len(msgs) {
		return n, conn.ErrReplan
	}
	return n, nil
}

// newPlanQP returns a QP, with only what its transmit batch needs, of a
// device sending through b.
func newPlanQP(b *planBind) *QP {
	qp := &QP{dev: &Device{bind: b, planner: b}}
	qp.env = wire.Envelope{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
		FlagsFragment: wire.FlagDontFragment, SrcPort: 4791, DstPort: 4791}
	peer := netip.AddrPortFrom(qp.env.Dst, 4791)
	qp.peer.Store(&peer)
	qp.xmit.init(16)
	return qp
}

// TestXmitResealsForPlannedIDs: each packet leaves with the ICRC for the
// ID the link planned for it, also when the link stops coalescing halfway
// through a batch and the rest is planned again.
func TestXmitResealsForPlannedIDs(t *testing.T) {
	for _, failAfter := range []int{-1, 0, 3} {
		b := &planBind{gso: true, failAfter: failAfter}
		qp := newPlanQP(b)
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

// TestXmitSlab fills batches with short packets, laid out in the batch's
// slab, and long ones, in pool buffers, with aborted short packets using
// up slab room so that later short ones fall back to the pool, and the
// batch growing (a new slab) midway; every packet must leave intact, its
// bytes its own, in two batches in a row. Packets aborted with nothing
// queued leave the slab empty.
func TestXmitSlab(t *testing.T) {
	b := &planBind{failAfter: -1}
	qp := newPlanQP(b)
	full := slabPkt - wire.BTHSize - wire.ICRCSize // a SEND ONLY of exactly slabPkt bytes
	abort := func() {
		for range xmitStart / 2 {
			qp.xmit.start(qp, &wire.BTHFields{Opcode: wire.RCSendOnly}, full)
			qp.xmit.abort()
		}
	}
	abort() // on an empty batch, which frees the room
	if qp.xmit.slabUsed != 0 {
		t.Fatalf("%d bytes of the slab used by packets aborted on an empty batch", qp.xmit.slabUsed)
	}
	for batch := range 2 {
		var want [][]byte
		pooled := 0
		for i := range 3 * xmitStart {
			if i == 1 {
				abort() // after a packet queued, which keeps the room used
			}
			size := full - i%5 // short, of several lengths
			if i%3 == 2 {
				size = 1024 // long
			}
			p := qp.xmit.start(qp, &wire.BTHFields{Opcode: wire.RCSendOnly, PKey: 0xffff, PSN: wire.PSN(i), DestQP: 0x11}, size)
			for j := range p.Payload() {
				p.Payload()[j] = byte(batch*7 + i + j)
			}
			qp.xmit.queue(qp, p)
			want = append(want, bytes.Clone(p.Payload()))
			if i < xmitStart && qp.xmit.bufs[i] != nil {
				pooled++
			}
		}
		// Of the first 8, in a slab of 8 places half used up by the
		// aborted ones: 2 long, and the last 2 short (128, 128, 128,
		// 124 bytes fit around the aborted 512, 4 bytes are left).
		if batch == 0 && pooled != 4 {
			t.Errorf("%d of the first %d packets in pool buffers, want 4", pooled, xmitStart)
		}
		b.sent = b.sent[:0]
		qp.xmit.flush(qp)
		if len(b.sent) != len(want) {
			t.Fatalf("batch %d: %d packets sent, want %d", batch, len(b.sent), len(want))
		}
		for i, s := range b.sent {
			if s.p.CheckICRC(&qp.env) != nil || !bytes.Equal(s.p.Payload(), want[i]) {
				t.Errorf("batch %d: packet %d left changed", batch, i)
			}
		}
		if qp.xmit.slabUsed != 0 {
			t.Errorf("batch %d: %d bytes of the slab still used after the flush", batch, qp.xmit.slabUsed)
		}
	}
}

// gatherBind records, for every datagram the device sends, whether its
// payload part (Body) is a view of the rig's region and the whole
// datagram, as the link would put it on the wire.
type gatherBind struct {
	conn.Bind
	region []byte
	mu     sync.Mutex
	sent   []gathered
}

type gathered struct {
	p        wire.Packet
	fromMR   bool // Body lies in the region
	bodySize int
	headOnly bool // Tail follows Buf in memory: the batch held only the packet's head
}

func (b *gatherBind) Send(msgs []conn.Message) (int, error) {
	b.mu.Lock()
	for i := range msgs {
		m := &msgs[i]
		off := mem.AddrOf(m.Body) - mem.AddrOf(b.region) // wraps, out of range, below the region
		in := len(m.Body) > 0 && off < uint64(len(b.region)) && &m.Body[0] == &b.region[off]
		head := len(m.Tail) > 0 && cap(m.Buf) > len(m.Buf) && &m.Buf[:len(m.Buf)+1][len(m.Buf)] == &m.Tail[0]
		b.sent = append(b.sent, gathered{m.AppendDatagram(nil), in, len(m.Body), head})
	}
	b.mu.Unlock()
	return b.Bind.Send(msgs)
}

// A payload of gatherMin bytes or more that lies in one SGE leaves from
// the memory region itself, not a copy, and the batch holds only the
// packet's head; a shorter one, or one across two SGEs, is copied into the
// packet. Either way the packet on the wire holds the region's bytes and
// an ICRC that checks.
func TestGatheredPayloadLeavesFromRegion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gb *gatherBind
		r := newPktRig(t, func(cfg *DeviceConfig, c *QPCap) {
			gb = &gatherBind{Bind: cfg.Bind}
			cfg.Bind, cfg.ActiveMTU = gb, ib.MTU1024
		})
		gb.region = r.region
		for i := range r.region {
			r.region[i] = byte(i*7 + 1)
		}
		sge := func(off, n int) SGE {
			return SGE{Addr: mem.AddrOf(r.region) + uint64(off), Length: uint32(n), LKey: ib.LKey(r.key)}
		}
		for _, c := range []struct {
			name   string
			sges   []SGE
			fromMR bool
		}{
			{"one SGE, 1000 bytes", []SGE{sge(10, 1000)}, true},
			{"one SGE, 100 bytes", []SGE{sge(10, 100)}, false},
			{"two SGEs, 600 bytes", []SGE{sge(0, 300), sge(500, 300)}, false},
		} {
			gb.mu.Lock()
			gb.sent = nil
			gb.mu.Unlock()
			wr := &SendWR{Opcode: ib.WRRDMAWrite, SGList: c.sges, RemoteAddr: 0x1000, RKey: 7}
			if _, err := r.qp.PostSend(wr); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			gb.mu.Lock()
			sent := gb.sent
			gb.mu.Unlock()
			if len(sent) != 1 {
				t.Fatalf("%s: %d datagrams sent, want 1", c.name, len(sent))
			}
			g := sent[0]
			var want []byte
			for _, s := range c.sges {
				off := int(s.Addr - mem.AddrOf(r.region))
				want = append(want, r.region[off:off+int(s.Length)]...)
			}
			checkGathered(t, c.name, g, want, c.fromMR, &r.qp.env)
		}
		// A READ response streams from the region the same way.
		gb.mu.Lock()
		gb.sent = nil
		gb.mu.Unlock()
		r.inject(t, &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 20, 900)})
		synctest.Wait()
		gb.mu.Lock()
		defer gb.mu.Unlock()
		if len(gb.sent) != 1 || gb.sent[0].p.Opcode() != wire.RCReadResponseOnly {
			t.Fatalf("after a READ request of 900 bytes the QP sent %d datagrams, want one READ RESPONSE ONLY", len(gb.sent))
		}
		checkGathered(t, "READ response, 900 bytes", gb.sent[0], r.region[20:920], true, &r.qp.env)
	})
}

func checkGathered(t *testing.T, name string, g gathered, want []byte, fromMR bool, env *wire.Envelope) {
	t.Helper()
	if g.fromMR != fromMR || !bytes.Equal(g.p.Payload(), want) || g.p.CheckICRC(env) != nil {
		t.Errorf("%s: payload from the region %v (%d bytes in Body), bytes right %v, ICRC %v; want from the region %v",
			name, g.fromMR, g.bodySize, bytes.Equal(g.p.Payload(), want), g.p.CheckICRC(env), fromMR)
	}
	if fromMR && !g.headOnly {
		t.Errorf("%s: the trailer does not follow the headers in memory: the batch laid out room for the payload", name)
	}
}
