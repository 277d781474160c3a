package verbs_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// TestWaitSharesReceive: over UDP on one processor, where CQ.Wait
// receives for the device while its receive loop waits and the two take
// turns (engine.Device.Progress), a ping-pong of SENDs and a stream of
// WRITEs with immediate, all waited for with Wait, arrive whole and in
// order.
func TestWaitSharesReceive(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const rounds, size, stream = 300, 64, 32
	p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP,
		Cap: verbs.QPCap{MaxSendWR: stream, MaxRecvWR: stream, MaxSendSGE: 1, MaxRecvSGE: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wcs := make([]verbs.WC, 1)
	wait := func(cq *verbs.CQ, wrID uint64) verbs.WC {
		t.Helper()
		if _, err := cq.Wait(ctx, wcs); err != nil {
			t.Fatal(err)
		}
		if wc := wcs[0]; wc.Status != verbs.WCSuccess || wc.WRID != wrID {
			t.Fatalf("completion %+v, want WR %d done", wc, wrID)
		}
		return wcs[0]
	}
	bufs := func(s *verbstest.Side) (src, dst *verbs.MR) {
		return s.Buffer(t, stream*size, 1), s.Buffer(t, stream*size, 0)
	}
	srcA, dstA := bufs(p.A)
	srcB, dstB := bufs(p.B)
	hop := func(from, to *verbstest.Side, src, dst *verbs.MR, i int) {
		binary.BigEndian.PutUint32(src.Bytes(), uint32(i))
		postRecv(t, to.QP, &verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{dst.SGE(0, size)}})
		post(t, from.QP, &verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{src.SGE(0, size)}})
		wait(from.SendCQ, uint64(i))
		wait(to.RecvCQ, uint64(i))
		if !bytes.Equal(dst.Bytes()[:size], src.Bytes()[:size]) {
			t.Fatalf("round %d: the SEND arrived as %x", i, dst.Bytes()[:8])
		}
	}
	for i := range rounds {
		hop(p.A, p.B, srcA, dstB, i)
		hop(p.B, p.A, srcB, dstA, i)
	}

	for i := range stream {
		postRecv(t, p.B.QP, &verbs.RecvWR{WRID: uint64(i)})
	}
	for i := range stream {
		binary.BigEndian.PutUint32(srcA.Bytes()[i*size:], uint32(i))
		post(t, p.A.QP, &verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRRDMAWriteWithImm, Imm: uint32(i),
			SGList: []verbs.SGE{srcA.SGE(i*size, size)}, RemoteAddr: dstB.Addr() + uint64(i*size), RKey: dstB.RKey()})
	}
	for i := range stream {
		if wc := wait(p.B.RecvCQ, uint64(i)); wc.Imm != uint32(i) {
			t.Fatalf("WRITE %d completed with immediate %d", i, wc.Imm)
		}
		if got := binary.BigEndian.Uint32(dstB.Bytes()[i*size:]); got != uint32(i) {
			t.Fatalf("WRITE %d left %d in its slot", i, got)
		}
	}
}

// TestWaitEmpty: Wait with no room for a completion fails at once, where
// it would otherwise wait for ever, and takes no completion.
func TestWaitEmpty(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	src, dst := p.A.Buffer(t, 8, 1), p.B.Buffer(t, 8, 0)
	if err := p.A.QP.PostSend(&verbs.SendWR{WRID: 5, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()}); err != nil {
		t.Fatal(err)
	}
	for _, wcs := range [][]verbs.WC{nil, {}} {
		if n, err := p.A.SendCQ.Wait(context.Background(), wcs); n != 0 || !errors.Is(err, verbs.ErrInvalidArgument) {
			t.Errorf("Wait(%v) = %d, %v; want ErrInvalidArgument", wcs, n, err)
		}
	}
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.WRID != 5 || wc.Status != verbs.WCSuccess {
		t.Errorf("the completion after the failed waits: %+v", wc)
	}
}

// TestWaitAnswerCarriesTheACK: ib_send_lat's loop on one processor over a
// link without system calls — each side waits for its SEND's completion,
// then for the receive, then answers — sends one batch a hop: the answer
// with the ACK of the SEND it answers. The wait for the send's completion
// receives the peer's next SEND too (the ACK came with it), and the wait
// for that receive then finds the completion at once; settling the owed
// ACK before looking sent it alone, two batches a hop.
func TestWaitAnswerCarriesTheACK(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const rounds, size = 200, 8
	la, lb := newPollLink()
	p := verbstest.New(t, verbstest.Options{Binds: &[2]conn.Bind{la, lb}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wcs := make([]verbs.WC, 1)
	wait := func(cq *verbs.CQ, op verbs.WCOpcode) {
		t.Helper()
		if _, err := cq.Wait(ctx, wcs); err != nil {
			t.Fatal(err)
		}
		if wc := wcs[0]; wc.Status != verbs.WCSuccess || wc.Opcode != op {
			t.Fatalf("completion %+v, want a successful %v", wc, op)
		}
	}
	type side struct {
		*verbstest.Side
		src, dst *verbs.MR
		sent     int
	}
	a := &side{Side: p.A, src: p.A.Buffer(t, size, 0), dst: p.A.Buffer(t, size, 0)}
	b := &side{Side: p.B, src: p.B.Buffer(t, size, 0), dst: p.B.Buffer(t, size, 0)}
	send := func(s *side) {
		s.sent++
		binary.BigEndian.PutUint64(s.src.Bytes(), uint64(s.sent))
		post(t, s.QP, &verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{s.src.SGE(0, size)}})
	}
	// answer is one side's step of the loop: wait for the SEND it sent,
	// if any, and for the peer's, then answer.
	answer := func(s, peer *side) {
		if s.sent > 0 {
			wait(s.SendCQ, verbs.WCSend)
		}
		wait(s.RecvCQ, verbs.WCRecv)
		if got := binary.BigEndian.Uint64(s.dst.Bytes()); got != uint64(peer.sent) {
			t.Fatalf("SEND %d of the peer arrived as %d", peer.sent, got)
		}
		postRecv(t, s.QP, &verbs.RecvWR{SGList: []verbs.SGE{s.dst.SGE(0, size)}})
		send(s)
	}
	for _, s := range []*side{a, b} {
		postRecv(t, s.QP, &verbs.RecvWR{SGList: []verbs.SGE{s.dst.SGE(0, size)}})
	}
	send(a)
	for range rounds {
		answer(b, a)
		answer(a, b)
	}
	wait(b.SendCQ, verbs.WCSend)
	// One batch a SEND, and the ACK of the last, which nothing answered.
	// Which goroutine runs after a yield is the scheduler's choice, and
	// now and then the device's own goroutines send an owed ACK before
	// the answer is posted (under the race detector, which shuffles the
	// choice on purpose, about one hop in eight); settling first sent it
	// alone every hop.
	for _, l := range []struct {
		name  string
		bind  *pollBind
		posts int
	}{{"A", la, a.sent}, {"B", lb, b.sent}} {
		if n := l.bind.sends.Load(); n > int64(l.posts+1+l.posts*3/10) {
			t.Errorf("side %s sent %d batches for %d SENDs, want about one a SEND (its answer and the ACK it owed)", l.name, n, l.posts)
		}
	}
}
