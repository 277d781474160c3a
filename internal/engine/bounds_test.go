package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
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
		ready = r.dev.enqueue(r.qp, &inPkt{p: wire.Packet(b.b[:n]), buf: b}, ready)
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

// TestInboundGrowsUnderTurns: the inbound ring grows from its start to its
// depth while the QP's turns consume it on another goroutine (the ring's
// consumer, kept out only while it grows), and loses, repeats or reorders
// nothing: bursts of RDMA WRITEs in PSN order all execute, in order. With
// quiet periods shortened and pauses between some bursts, the turns also
// shrink the ring back meanwhile (shrink.go), with the same result.
func TestInboundGrowsUnderTurns(t *testing.T) {
	for _, quiet := range []time.Duration{time.Hour, 100 * time.Microsecond} {
		t.Run(fmt.Sprint("quiet ", quiet), func(t *testing.T) {
			old := shrinkQuiet
			t.Cleanup(func() { shrinkQuiet = old }) // after the device closed: its worker may run a turn until then
			shrinkQuiet = quiet
			testInboundUnderTurns(t, quiet < time.Millisecond)
		})
	}
}

func testInboundUnderTurns(t *testing.T, pause bool) {
	r := newFuzzRig(t)
	const n = 20000
	if c := r.qp.inbound.Cap(); c != inboundStart {
		t.Fatalf("a new QP's ring has %d slots, want %d", c, inboundStart)
	}
	before := r.dev.Counters()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the turns
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				r.qp.task.schedule()
			}
		}
	}()
	va := mem.AddrOf(r.region)
	var ready []*QP
	burst, grew, shrank := 1, 0, 0
	for psn := 0; psn < n; {
		r.dev.rxGate.Lock() // as a receive loop queues: the ring's size is the producer's to read
		if c := r.qp.inbound.Cap(); pause && burst%3 == 0 {
			r.dev.rxGate.Unlock()
			time.Sleep(time.Millisecond) // quiet: the turns may shrink the ring
			r.dev.rxGate.Lock()
			if r.qp.inbound.Cap() < c {
				shrank++
			}
		}
		for k := 0; k < burst && psn < n; k++ {
			f := wire.BTHFields{Opcode: wire.RCWriteOnly, PKey: defaultPKey, DestQP: r.qp.qpn, PSN: wire.PSN(psn)}
			b := getBuf()
			p, err := wire.NewPacket(b.b[:], 0, &f, 4)
			if err != nil {
				t.Fatal(err)
			}
			off := uint64(psn%256) * 4
			p.RETH().Encode(&wire.RETHFields{VA: va + off, RKey: uint32(r.key), DMALength: 4})
			binary.BigEndian.PutUint32(p.Payload(), uint32(psn))
			c := r.qp.inbound.Cap()
			ready = r.dev.enqueue(r.qp, &inPkt{p: p, buf: b}, ready)
			if r.qp.inbound.Cap() > c {
				grew++
			}
			psn++
		}
		r.dev.rxGate.Unlock()
		ready = scheduleReady(ready)
		burst = burst*7%701 + 1 // 1 to 701 packets
		for r.qp.inbound.Len() > 3000 {
			runtime.Gosched() // no drops: the test is of growth, not overflow
		}
	}
	for r.qp.inbound.Len() > 0 {
		runtime.Gosched()
	}
	close(stop)
	<-done
	r.qp.mu.Lock()
	got := r.qp.resp.psn
	r.qp.mu.Unlock()
	if got != wire.PSN(n) {
		t.Errorf("the responder expects PSN %d, want %d", got, n)
	}
	after := r.dev.Counters()
	for _, c := range []Counter{DropRxOverflow, OutOfSeqRequest, DuplicateRequest} {
		if d := after.Get(c) - before.Get(c); d != 0 {
			t.Errorf("%v +%d", c, d)
		}
	}
	for psn := n - 256; psn < n; psn++ {
		off := (psn % 256) * 4
		if v := binary.BigEndian.Uint32(r.region[off:]); v != uint32(psn) {
			t.Fatalf("the region holds %d at offset %d, want WRITE %d's", v, off, psn)
		}
	}
	if grew == 0 {
		t.Errorf("the ring never grew")
	}
	if pause && shrank == 0 {
		t.Errorf("the ring grew %d times and never shrank in the pauses", grew)
	}
	t.Logf("the ring grew %d times and shrank in %d pauses", grew, shrank)
}

// TestPostStateRefusal: a post the QP's state refuses says which state,
// and the refusal allocates nothing (a program may retry it in a loop).
func TestPostStateRefusal(t *testing.T) {
	r := newFuzzRig(t)
	qp, err := r.dev.CreateQP(1, &QPInitAttr{Type: ib.QPTypeRC, SendCQ: r.cq, RecvCQ: r.cq, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Destroy()
	sw, rw := &SendWR{Opcode: ib.WRSend}, &RecvWR{}
	for _, post := range []func() error{
		func() error { _, err := qp.PostSend(sw); return err },
		func() error { _, err := qp.PostRecv(rw); return err },
	} {
		if err := post(); !errors.Is(err, ErrQPState) || !strings.HasSuffix(err.Error(), ": the QP is in RESET") {
			t.Errorf("a post in RESET: %v", err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = post() }); n != 0 {
			t.Errorf("a refused post allocates %v times", n)
		}
	}
}
