package engine

import (
	"testing"

	"github.com/goverbs/goverbs/internal/wire"
)

// repeatQP is a responder with three READs of eight responses each at
// path MTU 256: A (PSNs 0-7) sent in full, B (8-15) under way at 10, C
// (16-23) queued behind it.
func repeatQP() *QP {
	qp := &QP{mtu: 256}
	r := &qp.resp
	r.res = make([]resource, 4)
	for i := range 3 {
		first := wire.PSN(8 * i)
		r.res[i] = resource{kind: wire.OpRead, first: first, last: first.Add(7), va: 0x10000 * uint64(i+1), rkey: 7, length: 2048}
	}
	r.res[0].sent, r.res[1].sent = true, true
	r.read = readStream{active: true, started: true, res: 1, end: 15, va: 0x20000 + 512, rkey: 7, length: 1536, psn: 10}
	r.readQ.push(&readStream{active: true, res: 2, end: 23, va: 0x30000, rkey: 7, length: 2048, psn: 16})
	return qp
}

// order lists the streams in the order they will send.
func order(qp *QP) []readStream {
	var s []readStream
	if qp.resp.read.active {
		s = append(s, qp.resp.read)
	}
	return append(s, qp.resp.readQ.q[:qp.resp.readQ.n]...)
}

// checkOrder compares the streams with want: resource, first PSN to
// send, and 1 if asked again.
func checkOrder(t *testing.T, qp *QP, want ...[3]int) {
	t.Helper()
	got := order(qp)
	if len(got) != len(want) {
		t.Fatalf("%d streams, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if g := got[i]; g.res != w[0] || g.psn != wire.PSN(w[1]) || g.repeat != (w[2] == 1) {
			t.Errorf("stream %d: resource %d from PSN %d (asked again %v), want resource %d from %d (%v)",
				i, g.res, g.psn, g.repeat, w[0], w[1], w[2] == 1)
		}
	}
}

// A go-back-N requester (rxe) asks again for the rest of A and for B and
// C in full. Each response goes once: A's rest first, then B's from its
// start in place of what was left of B, and C as queued — asking for C
// again is redundant; one loss signal for the pacer.
func TestRepeatReadGoBackN(t *testing.T) {
	qp := repeatQP()
	if o := qp.repeatRead(0, 0x10000+256, 7, 1792, 1); o != respDupRead {
		t.Fatalf("A asked again: %v", o)
	}
	if o := qp.repeatRead(1, 0x20000, 7, 2048, 8); o != respDupRead {
		t.Fatalf("B asked again: %v", o)
	}
	if o := qp.repeatRead(2, 0x30000, 7, 2048, 16); o != respDupDrop {
		t.Errorf("C asked again while queued: %v, want dropped", o)
	}
	checkOrder(t, qp, [3]int{0, 1, 1}, [3]int{1, 8, 1}, [3]int{2, 16, 0})
	if s := &qp.resp.sent; !s.loss || s.lossPSN != 1 || s.epoch != 1 {
		t.Errorf("loss signal %v at %d, epoch %d; want one, at 1, epoch 1", s.loss, s.lossPSN, s.epoch)
	}
}

// goverbs asks again for the part of A it misses: that goes first, and
// the streams of B and C, which it still wants, follow as they were. A gap
// of one response is a loss on the path, no signal for the pacer.
func TestRepeatReadSelective(t *testing.T) {
	qp := repeatQP()
	if o := qp.repeatRead(0, 0x10000+256, 7, 256, 1); o != respDupRead {
		t.Fatalf("A's gap asked for: %v", o)
	}
	checkOrder(t, qp, [3]int{0, 1, 1}, [3]int{1, 10, 0}, [3]int{2, 16, 0})
	// The part of B not yet sent, asked for too early: redundant.
	if o := qp.repeatRead(1, 0x20000+1024, 7, 512, 12); o != respDupDrop {
		t.Errorf("B asked again for what it is still to send: %v, want dropped", o)
	}
	// A second gap of A: after the first, before B.
	if o := qp.repeatRead(0, 0x10000+1024, 7, 256, 4); o != respDupRead {
		t.Fatalf("A's second gap: %v", o)
	}
	checkOrder(t, qp, [3]int{0, 1, 1}, [3]int{0, 4, 1}, [3]int{1, 10, 0}, [3]int{2, 16, 0})
	if s := &qp.resp.sent; s.epoch != 0 || s.loss {
		t.Errorf("loss epoch %d (signal %v) after asks for one response each, want none: a loss on the path", s.epoch, s.loss)
	}
}

// Asks go in PSN order, whatever order they come in: B asked again in
// full, then a copy of an earlier ask for A's gap that a network delayed.
// A's goes first and B's resumes after it; queued behind B's, which the
// requester asks again and again while it is paced, A's never ran, and
// what came after A waited for it.
func TestRepeatReadInPSNOrder(t *testing.T) {
	qp := repeatQP()
	if o := qp.repeatRead(1, 0x20000, 7, 2048, 8); o != respDupRead {
		t.Fatalf("B asked again: %v", o)
	}
	if o := qp.repeatRead(0, 0x10000+256, 7, 256, 1); o != respDupRead {
		t.Fatalf("A's gap asked for: %v", o)
	}
	checkOrder(t, qp, [3]int{0, 1, 1}, [3]int{1, 8, 1}, [3]int{2, 16, 0})
	// A second gap of A, before B's ask and after A's first: between them.
	if o := qp.repeatRead(0, 0x10000+1024, 7, 256, 4); o != respDupRead {
		t.Fatalf("A's second gap: %v", o)
	}
	checkOrder(t, qp, [3]int{0, 1, 1}, [3]int{0, 4, 1}, [3]int{1, 8, 1}, [3]int{2, 16, 0})
}
