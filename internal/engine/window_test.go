package engine

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// The window on its own, against a model path: a round trip and a
// receiver that takes at most capacity PSNs per second. It grows while
// the delivery rate grows with it and stops one doubling past the
// receiver's limit; it grows to the cap behind a fast receiver.
func TestWindowFollowsDeliveryRate(t *testing.T) {
	for _, c := range []struct {
		name     string
		rtt      time.Duration
		capacity int64 // PSNs per second the receiver takes
		want     uint32
	}{
		// 128 PSNs per 100 µs is 1.28 M/s: a receiver ten times faster
		// takes every doubling up to the cap.
		{"fast receiver", 100 * time.Microsecond, 100_000_000, 1024},
		// At 1.5 × 128 PSNs per round trip, 256 still pays (×1.5) and
		// 512 does not.
		{"receiver at 1.5 windows per round trip", 100 * time.Microsecond, 1_920_000, 256},
		// Already the bottleneck at 128: no doubling pays.
		{"slow receiver", 100 * time.Microsecond, 500_000, 128},
		// A receiver that takes over a millisecond to drain the window
		// is not probed at all, though a doubling would pay: 128 PSNs per
		// 1.5 ms round trip.
		{"long drain", 1500 * time.Microsecond, 100_000_000, 128},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w window
			w.init(256)
			now, acked := t0, wire.PSN(0)
			var most uint32
			for range 20000 {
				w.update(now, acked)
				// The window is full every step: the sender has more.
				w.full(acked.Add(w.size), acked)
				most = max(most, w.size)
				rate := min(int64(w.size)*int64(time.Second)/int64(c.rtt), c.capacity)
				step := 20 * time.Microsecond
				acked = acked.Add(uint32(rate * int64(step) / int64(time.Second)))
				now = now.Add(step)
			}
			if w.size != c.want {
				t.Errorf("window %d after 400 ms, want %d", w.size, c.want)
			}
			if most > max(2*c.want, minWindow) && c.want < w.max {
				t.Errorf("window went up to %d; a probe goes one doubling past %d at most", most, c.want)
			}
		})
	}
}

// A sender that does not fill the window learns nothing from its rate: the
// window stays where it is.
func TestWindowNotLimitedDoesNotGrow(t *testing.T) {
	var w window
	w.init(256)
	now, acked := t0, wire.PSN(0)
	for range 1000 {
		w.update(now, acked)
		acked = acked.Add(50)
		now = now.Add(10 * time.Microsecond)
	}
	if w.size != minWindow {
		t.Errorf("window %d for a sender that never filled it, want %d", w.size, minWindow)
	}
}

// A loss takes the window back to its start once: further signals for
// PSNs sent before the shrink are the same loss. One after them shrinks
// again.
func TestWindowLossShrinksOncePerLoss(t *testing.T) {
	w := window{size: 1024, base: 1024, max: 1024}
	w.loss(100, 1100)
	if w.size != minWindow || w.base != minWindow {
		t.Fatalf("window %d base %d after a loss, want %d", w.size, w.base, minWindow)
	}
	w.size, w.base = 512, 512 // grown back meanwhile
	w.loss(100, 1200)         // the NAK seen again, the resend's timeout
	w.loss(900, 1300)         // a duplicate-driven resend within the same window
	if w.size != 512 {
		t.Errorf("window %d after signals of the same loss, want it untouched at 512", w.size)
	}
	w.update(t0, 1100) // the loss is repaired
	w.loss(1150, 1700)
	if w.size != minWindow {
		t.Errorf("window %d after a second loss, want %d", w.size, minWindow)
	}
	// A doubling under test is dropped with the loss.
	w = window{size: 512, base: 256, max: 1024}
	w.loss(0, 10)
	if w.size != minWindow || w.base != minWindow {
		t.Errorf("window %d base %d after a loss during a doubling, want %d", w.size, w.base, minWindow)
	}
}

func TestWindowCap(t *testing.T) {
	for _, c := range []struct {
		mtu  uint32
		want uint32
	}{{256, 1024}, {1024, 1024}, {4096, 512}, {1 << 20, minWindow}} {
		var w window
		w.init(c.mtu)
		if w.max != c.want || w.size != minWindow {
			t.Errorf("MTU %d: window %d capped at %d, want %d capped at %d", c.mtu, w.size, w.max, minWindow, c.want)
		}
	}
}

// windowLink is a responder at the far end of a memconn link for the
// rig's QP: a receive queue of depth datagrams, beyond which arrivals are
// lost, drained one packet per service time, with go-back-N as IBA
// 9.7.5.2 has it (in-order packets ACKed where they ask for it, one
// sequence NAK per gap, duplicates ACKed). It checks every WRITE payload
// against the region the rig writes from.
type windowLink struct {
	r       *pktRig
	queue   chan wire.Packet
	service time.Duration

	mu        sync.Mutex
	overflow  int // arrivals dropped at a full queue
	seqErrors int // packets past a gap
	bad       int // payloads that differ from what was written
	placed    int // packets taken in order
}

func newWindowLink(r *pktRig, depth int, service time.Duration) *windowLink {
	l := &windowLink{r: r, queue: make(chan wire.Packet, depth), service: service}
	go l.receive()
	go l.serve()
	return l
}

func (l *windowLink) receive() {
	msgs := make([]conn.Message, 64)
	for i := range msgs {
		msgs[i].Buf = make([]byte, pktBufSize)
	}
	defer close(l.queue)
	for {
		n, err := l.r.peer.Recv(msgs)
		if err != nil {
			return
		}
		for i := range n {
			select {
			case l.queue <- wire.Packet(bytes.Clone(msgs[i].Buf[:msgs[i].N])):
			default:
				l.mu.Lock()
				l.overflow++
				l.mu.Unlock()
			}
		}
	}
}

func (l *windowLink) serve() {
	var expected wire.PSN
	nakSent := false
	for p := range l.queue {
		time.Sleep(l.service)
		psn := p.BTH().PSN()
		l.mu.Lock()
		switch {
		case psn == expected:
			// WRITEs of a whole region in MTU-sized packets.
			off := int(psn) % (len(l.r.region) / 256) * 256
			if !bytes.Equal(p.Payload(), l.r.region[off:off+256]) {
				l.bad++
			}
			l.placed++
			expected, nakSent = expected.Next(), false
			if p.BTH().AckRequest() {
				l.send(inACK(psn))
			}
		case expected.Less(psn):
			l.seqErrors++
			if !nakSent {
				nakSent = true
				l.send(inNAK(wire.NAKPSNSequenceError, expected))
			}
		case p.BTH().AckRequest():
			l.send(inACK(expected.Sub(1)))
		}
		l.mu.Unlock()
	}
}

func (l *windowLink) send(p *pkt) {
	f := wire.BTHFields{Opcode: p.op, PKey: defaultPKey, DestQP: l.r.qp.qpn, PSN: p.psn}
	b, _ := wire.NewPacket(make([]byte, pktBufSize), 0, &f, 0)
	p.fill(l.r, b)
	b.SealICRC(&l.r.env)
	_, _ = l.r.peer.Send([]conn.Message{{Buf: b, Addr: l.r.dev.local}})
}

// streamWrites posts total WRITEs of the rig's region (4 packets at MTU
// 256) and keeps the send queue full until all complete; it returns the
// window sizes seen, sampled every 10 µs.
func streamWrites(t *testing.T, r *pktRig, total int) (sizes []uint32) {
	t.Helper()
	posted, done := 0, 0
	wcs := make([]WC, 64)
	for done < total {
		for posted < total && posted-done < 512 {
			posted++
			wr := &SendWR{WRID: uint64(posted), Opcode: ib.WRRDMAWrite, RemoteAddr: peerVA, RKey: 1,
				SGList: []SGE{{Addr: mem.AddrOf(r.region), Length: uint32(len(r.region)), LKey: ib.LKey(r.key)}}}
			if posted%32 == 0 || posted == total {
				wr.Flags = ib.SendSignaled
			}
			if _, err := r.qp.PostSend(wr); err != nil {
				t.Fatalf("WRITE %d: %v", posted, err)
			}
		}
		time.Sleep(10 * time.Microsecond)
		n, _ := r.cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			if wc.Status != ib.WCSuccess {
				t.Fatalf("WRITE %d: %v", wc.WRID, wc.Status)
			}
			done = int(wc.WRID)
		}
		r.qp.mu.Lock()
		sizes = append(sizes, r.qp.req.win.size)
		r.qp.mu.Unlock()
	}
	return sizes
}

// windowRig is a pktRig for streams: 1024 send WQEs, a 40 ms ACK timeout
// with retries enough for the loss rows, and a link that delays every
// datagram by oneWay.
func windowRig(t *testing.T, oneWay time.Duration) *pktRig {
	r := &pktRig{fuzzRig: newFuzzRig(t, func(_ *DeviceConfig, c *QPCap) { c.MaxSendWR = 1024 })}
	r.qp.mu.Lock()
	r.qp.attr.Timeout, r.qp.attr.RetryCnt = 14, 7
	r.qp.comp.reload(&r.qp.attr)
	r.qp.mu.Unlock()
	r.net.SetImpairments(memconn.Impairments{Delay: oneWay})
	return r
}

// Behind a fast receiver and a 40 µs round trip the window is what limits
// the rate, and it grows to its cap; every byte arrives.
func TestWindowGrowsOnFastPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := windowRig(t, 20*time.Microsecond)
		l := newWindowLink(r, 4096, 0)
		sizes := streamWrites(t, r, 3000)
		if last := sizes[len(sizes)-1]; last != maxWindow {
			t.Errorf("window %d at the end, want the cap %d", last, maxWindow)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.overflow != 0 || l.seqErrors != 0 || l.bad != 0 || l.placed != 4*3000 {
			t.Errorf("receiver: %d overflowed, %d past a gap, %d bad payloads, %d placed of %d", l.overflow, l.seqErrors, l.bad, l.placed, 4*3000)
		}
	})
}

// A receiver that is the bottleneck (1 µs a packet, a queue of 384, as
// rxe in a VM behind a tap's queue) is never overrun: the window stays
// within one doubling of the start. The fixed window of 1024 overruns it.
func TestWindowSlowReceiverNotOverrun(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		name := "adaptive"
		if fixed {
			name = "fixed at the cap"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := windowRig(t, 20*time.Microsecond)
				if fixed {
					r.qp.mu.Lock()
					r.qp.req.win = window{size: maxWindow, base: maxWindow, max: maxWindow, hold: 1 << 30}
					r.qp.mu.Unlock()
				}
				l := newWindowLink(r, 384, time.Microsecond)
				sizes := streamWrites(t, r, 2000)
				l.mu.Lock()
				defer l.mu.Unlock()
				if fixed {
					if l.overflow == 0 {
						t.Error("the fixed window of 1024 did not overrun the receiver's queue of 384; the test shows nothing")
					}
					return
				}
				most := uint32(0)
				for _, s := range sizes {
					most = max(most, s)
				}
				if most > 2*minWindow {
					t.Errorf("window went up to %d against a receiver saturated at %d", most, minWindow)
				}
				if l.overflow != 0 || l.seqErrors != 0 || l.bad != 0 || l.placed != 4*2000 {
					t.Errorf("receiver: %d overflowed, %d past a gap, %d bad payloads, %d placed of %d", l.overflow, l.seqErrors, l.bad, l.placed, 4*2000)
				}
				if c := r.dev.Counters(); c.Get(RetransmittedPkts) != 0 {
					t.Errorf("%d packets retransmitted", c.Get(RetransmittedPkts))
				}
			})
		})
	}
}

// One lost packet on the fast path takes the grown window back to its
// start once (its sequence NAK and the duplicates around it are one loss),
// and it grows back.
func TestWindowShrinksOnLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := windowRig(t, 20*time.Microsecond)
		l := newWindowLink(r, 4096, 0)
		const lost = 10000
		dropped := false
		r.net.SetFilter(func(d *memconn.Datagram) memconn.Verdict {
			p := wire.Packet(d.Data)
			if d.Dst == r.peer.LocalAddr() && !dropped && p.BTH().PSN() == lost {
				dropped = true
				return memconn.Drop
			}
			return memconn.Deliver
		})
		sizes := streamWrites(t, r, 10000)
		// The window reached the cap before the loss, went back to the
		// start, then grew to the cap again.
		i := 0
		for i < len(sizes) && sizes[i] != maxWindow {
			i++
		}
		least := uint32(maxWindow)
		for _, s := range sizes[i:] {
			least = min(least, s)
		}
		if i == len(sizes) || least != minWindow || sizes[len(sizes)-1] != maxWindow {
			t.Errorf("window sizes over the run %v; want the cap, the start, the cap again", compress(sizes))
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if !dropped || l.bad != 0 || l.placed != 4*10000 {
			t.Errorf("dropped %v; receiver: %d bad payloads, %d placed of %d", dropped, l.bad, l.placed, 4*10000)
		}
		if c := r.dev.Counters(); c.Get(RcvdSeqErr) != 1 {
			t.Errorf("%d sequence NAKs, want 1", c.Get(RcvdSeqErr))
		}
	})
}

// compress lists a series of sizes without repeats, for messages.
func compress(s []uint32) []uint32 {
	var out []uint32
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// TestTurnSendsShortMessagesWhole: a turn neither stops at its budget nor
// at the window inside a short message, so every Send carries whole
// messages and a GSO link's runs are not cut. Seven-packet WRITEs (two
// SGEs, the region and most of it again): the turn's budget of 60 packets
// ends inside one, and so does the window of 128 PSNs while nothing is
// acknowledged; an ACK of the first message makes room for the next one
// whole.
func TestTurnSendsShortMessagesWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const msgs, npkts = 30, 7
		r, cb := countingRig(t, msgs)
		wr := func(i int) *SendWR { return r.writeWR(i, npkts) }
		if minWindow%npkts == 0 {
			t.Fatalf("%d-packet messages fit the window (%d) evenly", npkts, minWindow)
		}
		if _, err := r.qp.PostSend(wr(0)); err != nil {
			t.Fatal(err)
		}
		// The rest queue behind it while a turn is held back (see
		// TestPostsBehindWorkCoalesce), so that one turn finds them all.
		r.qp.mu.Lock()
		var posted atomic.Bool
		go func() {
			for i := 1; i < msgs; i++ {
				if _, err := r.qp.PostSend(wr(i)); err != nil {
					t.Error(err)
				}
			}
			posted.Store(true)
		}()
		spinUntil(t, &r.qp.mu, posted.Load, "a post behind unacknowledged work ran the turn inline")
		r.qp.mu.Unlock()

		first := checkWholeSends(t, "before any ACK", cb, r.sent(), 0, wire.RCWriteLast)
		if want := minWindow / npkts * npkts; len(first) != want {
			t.Fatalf("%d packets sent into a window of %d PSNs, want %d: the messages that fit whole", len(first), minWindow, want)
		}
		psn0 := first[0].BTH().PSN()
		r.inject(t, inACK(psn0.Add(npkts-1)))
		next := checkWholeSends(t, "after the ACK of the first message", cb, r.sent(), len(cb.calls())-1, wire.RCWriteLast)
		if len(next) != npkts || next[0].BTH().PSN() != psn0.Add(uint32(len(first))) {
			t.Fatalf("after the ACK of the first message %d packets went, want the next message's %d", len(next), npkts)
		}
	})
}

// checkWholeSends checks that the Sends from call from on, which carried
// pkts, each ended with the last packet of a WRITE (opcode last), and
// returns pkts.
func checkWholeSends(t *testing.T, when string, cb *countingBind, pkts []wire.Packet, from int, last wire.Opcode) []wire.Packet {
	t.Helper()
	calls, i := cb.calls()[from:], 0
	for _, n := range calls {
		i += n
		if i > len(pkts) {
			t.Fatalf("%s: Sends %v, %d packets arrived", when, calls, len(pkts))
		}
		if op := pkts[i-1].Opcode(); op != last {
			t.Errorf("%s: a Send of %d packets ended with %v at PSN %d, inside a message", when, n, op, pkts[i-1].BTH().PSN())
		}
	}
	return pkts
}

// TestResendKeepsTheBudget: a go-back-N resends in turns of the budget:
// past it a turn goes on only to the end of its last run (extends), not
// through every message the go-back-N set back to sending.
func TestResendKeepsTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const msgs = 100
		r, cb := countingRig(t, msgs)
		if _, err := r.qp.PostSend(r.sendWR(0)); err != nil {
			t.Fatal(err)
		}
		r.qp.mu.Lock()
		var posted atomic.Bool
		go func() {
			for i := 1; i < msgs; i++ {
				if _, err := r.qp.PostSend(r.sendWR(i % 32)); err != nil {
					t.Error(err)
				}
			}
			posted.Store(true)
		}()
		spinUntil(t, &r.qp.mu, posted.Load, "a post behind unacknowledged work ran the turn inline")
		r.qp.mu.Unlock()
		first := r.sent()
		if len(first) != msgs {
			t.Fatalf("%d packets sent, want %d", len(first), msgs)
		}
		before := len(cb.calls())
		r.inject(t, inNAK(wire.NAKPSNSequenceError, first[1].BTH().PSN()))
		if again := r.sent(); len(again) != msgs-1 {
			t.Fatalf("%d packets resent after a sequence NAK of the second, want %d", len(again), msgs-1)
		}
		limit := max(turnBudget, cb.RunLimit(len(first[1])))
		for _, n := range cb.calls()[before:] {
			if n > limit {
				t.Errorf("a Send of %d packets in the resend (Sends %v), more than a turn's budget of %d or a run", n, cb.calls()[before:], turnBudget)
			}
		}
	})
}

// writeWR is an RDMA WRITE of npkts packets, wr_id i, from two SGEs (the
// region, and most of it again): npkts is 7, which divides neither a
// turn's budget nor the smallest window.
func (r *pktRig) writeWR(i, npkts int) *SendWR {
	mtu := r.mtu.Bytes()
	if turnBudget%npkts == 0 || len(r.region) >= npkts*mtu || 2*len(r.region) < npkts*mtu {
		panic("writeWR: the message must take both SGEs and not divide the budget")
	}
	return &SendWR{WRID: uint64(i), Opcode: ib.WRRDMAWrite, RemoteAddr: 0x1000, RKey: 7, SGList: []SGE{
		{Addr: mem.AddrOf(r.region), Length: uint32(len(r.region)), LKey: ib.LKey(r.key)},
		{Addr: mem.AddrOf(r.region), Length: uint32(npkts*mtu - len(r.region)), LKey: ib.LKey(r.key)}}}
}

// TestUCTurnSendsMessagesWhole: UC's requester, too, finishes a message it
// has begun past its budget: posted at once, thirty 7-packet WRITEs leave
// in Sends that each end with a WRITE Last, all of them, bytes and order
// as posted.
func TestUCTurnSendsMessagesWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const msgs, npkts = 30, 7
		r, cb := countingRigType(t, ib.QPTypeUC, msgs)
		for i := range r.region {
			r.region[i] = byte(i*13 + 5)
		}
		wrs := make([]*SendWR, msgs)
		for i := range wrs {
			wrs[i] = r.writeWR(i, npkts)
			if i > 0 {
				wrs[i-1].Next = wrs[i]
			}
		}
		if n, err := r.qp.PostSend(wrs[0]); err != nil || n != msgs {
			t.Fatalf("PostSend: %d of %d posted, %v", n, msgs, err)
		}
		pkts := checkWholeSends(t, "UC", cb, r.sent(), 0, wire.UCWriteLast)
		if len(pkts) != msgs*npkts {
			t.Fatalf("%d packets sent, want %d", len(pkts), msgs*npkts)
		}
		if calls := cb.calls(); len(calls) < 2 {
			t.Errorf("Sends %v: the budget should have split them", calls)
		}
		want := append(append([]byte(nil), r.region...), r.region[:npkts*r.mtu.Bytes()-len(r.region)]...)
		for i, p := range pkts {
			off := (i % npkts) * r.mtu.Bytes()
			if !bytes.Equal(p.Payload(), want[off:off+r.mtu.Bytes()]) {
				t.Fatalf("packet %d: payload is not bytes %d-%d of the message", i, off, off+r.mtu.Bytes())
			}
		}
	})
}

// TestTurnEndsWithItsRun: past its budget a turn goes on to the end of the
// run it is sending and no further, inside a message if the run ends
// there: 7-packet SENDs (all packets one size) on a link whose runs hold
// 20 leave 60 packets in the first turn, not the 63 that end the ninth
// message.
func TestTurnEndsWithItsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const msgs, npkts, runs = 12, 7, 20
		r, cb := countingRig(t, msgs)
		cb.runs = runs
		wrs := make([]*SendWR, msgs)
		for i := range wrs {
			wrs[i] = r.writeWR(i, npkts)
			wrs[i].Opcode = ib.WRSend
			if i > 0 {
				wrs[i-1].Next = wrs[i]
			}
		}
		if n, err := r.qp.PostSend(wrs[0]); err != nil || n != msgs {
			t.Fatalf("PostSend: %d of %d posted, %v", n, msgs, err)
		}
		pkts := r.sent()
		calls := cb.calls()
		if turnBudget%runs != 0 || len(calls) == 0 || calls[0] != turnBudget {
			t.Fatalf("Sends %v: the first turn should end with its third run, %d packets", calls, turnBudget)
		}
		if op := pkts[turnBudget-1].Opcode(); op == wire.RCSendLast {
			t.Errorf("the first turn ended with a SEND Last; its run ends inside a message")
		}
	})
}
