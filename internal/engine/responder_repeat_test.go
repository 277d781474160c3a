package engine

import (
	"testing"

	"github.com/goverbs/goverbs/internal/wire"
)

// repeatQP is a responder with three READs of three responses each at
// path MTU 256: A (PSNs 0-2) sent in full, B (3-5) under way at 4, C (6-8)
// queued behind it.
func repeatQP() *QP {
	qp := &QP{mtu: 256}
	r := &qp.resp
	r.res = make([]resource, 4)
	for i := range 3 {
		first := wire.PSN(3 * i)
		r.res[i] = resource{kind: wire.OpRead, first: first, last: first.Add(2), va: 0x1000 * uint64(i+1), rkey: 7, length: 768}
	}
	r.res[0].sent, r.res[1].sent = true, true
	r.read = readStream{active: true, started: true, res: 1, end: 5, va: 0x2000 + 256, rkey: 7, length: 512, psn: 4}
	r.readQ.push(&readStream{active: true, res: 2, end: 8, va: 0x3000, rkey: 7, length: 768, psn: 6})
	return qp
}

// order lists the streams in the order they will send: their first PSN
// to send and whether they were asked again.
func order(qp *QP) []readStream {
	var s []readStream
	if qp.resp.read.active {
		s = append(s, qp.resp.read)
	}
	return append(s, qp.resp.readQ.q[:qp.resp.readQ.n]...)
}

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
	if o := qp.repeatRead(0, 0x1000+256, 7, 512, 1); o != respDupRead {
		t.Fatalf("A asked again: %v", o)
	}
	if o := qp.repeatRead(1, 0x2000, 7, 768, 3); o != respDupRead {
		t.Fatalf("B asked again: %v", o)
	}
	if o := qp.repeatRead(2, 0x3000, 7, 768, 6); o != respDupDrop {
		t.Errorf("C asked again while queued: %v, want dropped", o)
	}
	checkOrder(t, qp, [3]int{0, 1, 1}, [3]int{1, 3, 1}, [3]int{2, 6, 0})
	if s := &qp.resp.sent; !s.loss || s.lossPSN != 1 || s.epoch != 1 {
		t.Errorf("loss signal %v at %d, epoch %d; want one, at 1, epoch 1", s.loss, s.lossPSN, s.epoch)
	}
}

// goverbs asks again for the part of A it misses: that goes first, and
// the streams of B and C, which it still wants, follow as they were.
func TestRepeatReadSelective(t *testing.T) {
	qp := repeatQP()
	if o := qp.repeatRead(0, 0x1000+256, 7, 256, 1); o != respDupRead {
		t.Fatalf("A's gap asked for: %v", o)
	}
	checkOrder(t, qp, [3]int{0, 1, 1}, [3]int{1, 4, 0}, [3]int{2, 6, 0})
	// The part of B not yet sent, asked for too early: redundant.
	if o := qp.repeatRead(1, 0x2000+512, 7, 256, 5); o != respDupDrop {
		t.Errorf("B asked again for what it is still to send: %v, want dropped", o)
	}
	// A second gap of A: after the first, before B.
	if o := qp.repeatRead(0, 0x1000+512, 7, 256, 2); o != respDupRead {
		t.Fatalf("A's second gap: %v", o)
	}
	checkOrder(t, qp, [3]int{0, 1, 1}, [3]int{0, 2, 1}, [3]int{1, 4, 0}, [3]int{2, 6, 0})
	if s := &qp.resp.sent; s.epoch != 1 {
		t.Errorf("loss epoch %d after two asks for responses sent before the first, want 1 (one loss signal)", s.epoch)
	}
}
