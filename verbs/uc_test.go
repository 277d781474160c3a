package verbs_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/wire"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// TestUCSendWrite runs every UC operation over both links, each size
// within and across the 4096-byte MTU: the data arrives, the receive
// completions are RC's, and the sender completes once its packets are
// out, with nothing acknowledging them.
func TestUCSendWrite(t *testing.T) {
	for _, link := range links {
		p := verbstest.New(t, verbstest.Options{Link: link, Type: verbs.QPTypeUC})
		for _, n := range []int{0, 1, 4095, 4096, 4097, 3*4096 + 5, 1 << 18} {
			for _, op := range []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm} {
				t.Run(fmt.Sprintf("%v/%v/%d", link, op, n), func(t *testing.T) {
					src := p.A.Buffer(t, n, 0x5c)
					dst := p.B.Buffer(t, n+7, 0)
					clear(dst.Bytes())
					send := op == verbs.WRSend || op == verbs.WRSendWithImm
					imm := op == verbs.WRSendWithImm || op == verbs.WRRDMAWriteWithImm
					if send || imm {
						postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 5, SGList: []verbs.SGE{dst.SGE(0, n+7)}})
					}
					post(t, p.A.QP, &verbs.SendWR{WRID: 9, Opcode: op, Flags: verbs.SendSignaled, Imm: 0x1234abcd,
						SGList: []verbs.SGE{src.SGE(0, n)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
					wcOp := verbs.WCSend
					if !send {
						wcOp = verbs.WCRDMAWrite
					}
					expectWC(t, verbstest.MustPoll(t, p.A.SendCQ, 1)[0], verbs.WC{
						WRID: 9, Status: verbs.WCSuccess, Opcode: wcOp, ByteLen: uint32(n), QPNum: p.A.QP.QPN()})
					if send || imm {
						want := verbs.WC{WRID: 5, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: uint32(n),
							QPNum: p.B.QP.QPN(), SrcQP: p.A.QP.QPN()}
						if !send {
							want.Opcode = verbs.WCRecvRDMAWithImm
						}
						if imm {
							want.Imm, want.Flags = 0x1234abcd, verbs.WCFlagWithImm
						}
						expectWC(t, verbstest.MustPoll(t, p.B.RecvCQ, 1)[0], want)
					} else {
						// Nothing completes for a WRITE at the target: a SEND
						// after it on the QP does, once the WRITE is placed.
						postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 6})
						post(t, p.A.QP, &verbs.SendWR{Opcode: verbs.WRSend})
						if wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]; wc.WRID != 6 || wc.Status != verbs.WCSuccess {
							t.Fatalf("the SEND after the WRITE: %+v", wc)
						}
					}
					if !bytes.Equal(dst.Bytes()[:n], src.Bytes()[:n]) || !bytes.Equal(dst.Bytes()[n:], make([]byte, 7)) {
						t.Fatal("received bytes differ from the sent ones, or overran the message")
					}
				})
			}
		}
		c := p.A.Dev.Counters()
		if c.Get(verbs.ACKSent) != 0 || p.B.Dev.Counters().Get(verbs.ACKSent) != 0 || c.Drops() != 0 || p.B.Dev.Counters().Drops() != 0 {
			t.Errorf("%v: UC answered or dropped something: %v / %v", link, c, p.B.Dev.Counters())
		}
	}
}

// waitFor polls cond, which must read only atomics (a counter), for up
// to 10 s: for results nothing completes.
func waitFor(tb testing.TB, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met in 10 s")
		}
	}
}

// TestUnackedRefuseOps posts the operations UC and UD QPs do not have:
// each is refused at once, and the QP stays usable.
func TestUnackedRefuseOps(t *testing.T) {
	for typ, refused := range map[verbs.QPType][]verbs.WROpcode{
		verbs.QPTypeUC: {verbs.WRRDMARead, verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd, verbs.WRSendWithInv},
		verbs.QPTypeUD: {verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm, verbs.WRRDMARead, verbs.WRAtomicCmpAndSwp,
			verbs.WRAtomicFetchAndAdd, verbs.WRSendWithInv},
	} {
		p := verbstest.New(t, verbstest.Options{Type: typ})
		buf := p.A.Buffer(t, 8, 1)
		for _, op := range refused {
			err := p.A.QP.PostSend(&verbs.SendWR{Opcode: op, SGList: []verbs.SGE{buf.SGE(0, 8)}, AH: p.A.AH, RemoteQPN: p.A.PeerQPN})
			if !errors.Is(err, verbs.ErrBadOpcode) {
				t.Errorf("%v %v: %v, want ErrBadOpcode", typ, op, err)
			}
		}
		post(t, p.A.QP, &verbs.SendWR{WRID: 3, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{buf.SGE(0, 8)},
			AH: p.A.AH, RemoteQPN: p.A.PeerQPN, RemoteQKey: verbstest.DefaultQKey})
		if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCSuccess {
			t.Errorf("%v: send after the refusals: %v", typ, wc.Status)
		}
	}
}

// TestUCModifyMasks checks UC's attribute masks (IBA 10.3.1): RC's
// responder and retry attributes are refused at RTR and RTS.
func TestUCModifyMasks(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{Type: verbs.QPTypeUC})
	qp := freshQP(t, p.A, verbs.QPTypeUC)
	must := func(a verbs.QPAttr, m verbs.QPAttrMask) {
		t.Helper()
		if err := qp.Modify(&a, m); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(a verbs.QPAttr, m verbs.QPAttrMask) {
		t.Helper()
		if err := qp.Modify(&a, m); !errors.Is(err, verbs.ErrInvalidAttrMask) {
			t.Errorf("mask %v: %v, want ErrInvalidAttrMask", m, err)
		}
	}
	ep := p.B.QP.Endpoint(0)
	must(verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1, AccessFlags: verbs.AccessRemoteWrite},
		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
	rtr := verbs.QPAttr{State: verbs.QPStateRTR, PathMTU: verbs.MTU1024, DestQPN: ep.QPN, AH: ep.AHAttr(), MinRNRTimer: 1, MaxDestRdAtomic: 1}
	base := verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN
	refused(rtr, base|verbs.QPAttrMinRNRTimer)
	refused(rtr, base|verbs.QPAttrMaxDestRdAtomic)
	refused(rtr, base&^verbs.QPAttrAV)
	must(rtr, base)
	rts := verbs.QPAttr{State: verbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1}
	refused(rts, verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrTimeout)
	refused(rts, verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|verbs.QPAttrMaxQPRdAtomic)
	refused(rts, verbs.QPAttrState)
	must(rts, verbs.QPAttrState|verbs.QPAttrSQPSN)
	if got := qp.State(); got != verbs.QPStateRTS {
		t.Fatalf("state %v", got)
	}
}

// dropNth returns a filter that drops the n-th datagram (from 1) it sees
// carrying opcode op, and counts what it dropped.
func dropNth(op wire.Opcode, n int, dropped *atomic.Int32) func(*memconn.Datagram) memconn.Verdict {
	var seen atomic.Int32
	return func(d *memconn.Datagram) memconn.Verdict {
		if len(d.Data) > 0 && wire.Opcode(d.Data[0]) == op && int(seen.Add(1)) == n {
			dropped.Add(1)
			return memconn.Drop
		}
		return memconn.Deliver
	}
}

// TestUCLossDropsMessage loses one packet in the middle of a UC SEND: the
// rest of that message is dropped and nothing completes for it, its
// receive WQE takes the next message, which arrives whole, and the sender
// completed both SENDs (nothing told it of the loss).
func TestUCLossDropsMessage(t *testing.T) {
	for _, lost := range []wire.Opcode{wire.UCSendFirst, wire.UCSendMiddle, wire.UCSendLastWithImmediate} {
		t.Run(lost.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Type: verbs.QPTypeUC})
			var dropped atomic.Int32
			p.Net.SetFilter(dropNth(lost, 1, &dropped))
			const n = 3 * 4096
			first, second := p.A.Buffer(t, n, 0x11), p.A.Buffer(t, n, 0x22)
			dst := p.B.Buffer(t, n, 0)
			postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{dst.SGE(0, n)}})
			postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 2, SGList: []verbs.SGE{p.B.Buffer(t, n, 0).SGE(0, n)}})
			for i, src := range []*verbs.MR{first, second} {
				post(t, p.A.QP, &verbs.SendWR{WRID: uint64(10 + i), Opcode: verbs.WRSendWithImm, Imm: uint32(i),
					Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, n)}})
			}
			for i, wc := range verbstest.MustPoll(t, p.A.SendCQ, 2) {
				if wc.Status != verbs.WCSuccess || wc.WRID != uint64(10+i) {
					t.Fatalf("send completion %d: %+v", i, wc)
				}
			}
			wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]
			expectWC(t, wc, verbs.WC{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: n, Imm: 1,
				Flags: verbs.WCFlagWithImm, QPNum: p.B.QP.QPN(), SrcQP: p.A.QP.QPN()})
			if !bytes.Equal(dst.Bytes(), second.Bytes()) {
				t.Fatal("the first receive WQE does not hold the second message")
			}
			if dropped.Load() != 1 {
				t.Fatalf("the filter dropped %d packets", dropped.Load())
			}
			time.Sleep(10 * time.Millisecond)
			if n, _ := p.B.RecvCQ.Poll(make([]verbs.WC, 1)); n != 0 {
				t.Fatal("a second receive completed")
			}
			c := p.B.Dev.Counters()
			incomplete := uint64(0) // the packets of the first message after the lost one
			if lost != wire.UCSendLastWithImmediate {
				incomplete = map[wire.Opcode]uint64{wire.UCSendFirst: 2, wire.UCSendMiddle: 1}[lost]
			}
			if c.Get(verbs.OutOfSeqRequest) != 1 || c.Get(verbs.DropUCIncomplete) != incomplete || c.Get(verbs.RDMARecvs) != 1 {
				t.Errorf("counters: out_of_seq_request %d (want 1), drop_uc_incomplete %d (want %d), rdma_recvs %d",
					c.Get(verbs.OutOfSeqRequest), c.Get(verbs.DropUCIncomplete), incomplete, c.Get(verbs.RDMARecvs))
			}
		})
	}
}

// TestUCDropsRefused sends the UC messages a RC responder would NAK — no
// receive posted, a SEND longer than its receive, a WRITE with a bad
// rkey, a WRITE to a QP that no longer allows it — over both links: each is
// dropped and counted, nothing answers, the sender completes, and the
// next good message arrives in the receive WQE the dropped one left.
func TestUCDropsRefused(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Link: link, Type: verbs.QPTypeUC})
			src := p.A.Buffer(t, 8192, 0x31)
			dst := p.B.Buffer(t, 8192, 0)
			clear(dst.Bytes())
			send := func(op verbs.WROpcode, n int, rkey verbs.RKey) {
				t.Helper()
				post(t, p.A.QP, &verbs.SendWR{Opcode: op, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, n)},
					RemoteAddr: dst.Addr(), RKey: rkey})
				if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCSuccess {
					t.Fatalf("%v: send completion %v", op, wc.Status)
				}
			}
			send(verbs.WRSend, 100, 0)
			expectNoRecv(t, p.B.RecvCQ, p.B.Dev, verbs.DropNoRecvWQE, 1)
			postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 6, SGList: []verbs.SGE{dst.SGE(0, 5000)}})
			send(verbs.WRSend, 8192, 0) // two packets, longer than the receive
			expectNoRecv(t, p.B.RecvCQ, p.B.Dev, verbs.DropInvalidRequest, 1)
			send(verbs.WRRDMAWriteWithImm, 64, dst.RKey()+1)
			expectNoRecv(t, p.B.RecvCQ, p.B.Dev, verbs.DropInvalidRequest, 2)
			noWrite := verbs.QPAttr{AccessFlags: verbs.AccessLocalWrite}
			if err := p.B.QP.Modify(&noWrite, verbs.QPAttrAccessFlags); err != nil {
				t.Fatal(err)
			}
			send(verbs.WRRDMAWrite, 64, dst.RKey())
			expectNoRecv(t, p.B.RecvCQ, p.B.Dev, verbs.DropInvalidRequest, 3)
			if !bytes.Equal(dst.Bytes()[5000:], make([]byte, 8192-5000)) {
				t.Fatal("a refused message wrote past the receive buffer")
			}
			send(verbs.WRSend, 4999, 0)
			wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]
			if wc.Status != verbs.WCSuccess || wc.WRID != 6 || wc.ByteLen != 4999 || !bytes.Equal(dst.Bytes()[:4999], src.Bytes()[:4999]) {
				t.Fatalf("the next message: %+v", wc)
			}
			if p.B.QP.State() != verbs.QPStateRTS || p.B.Dev.Counters().Get(verbs.NAKSent)+p.B.Dev.Counters().Get(verbs.ACKSent) != 0 {
				t.Fatal("the UC responder answered or left RTS")
			}
		})
	}
}

// TestUCWriteImmLoss loses the middle of a WRITE with immediate: its
// completion never comes, the next one's does, and the receive WQE the
// lost one did not take serves it.
func TestUCWriteImmLoss(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{Type: verbs.QPTypeUC})
	var dropped atomic.Int32
	p.Net.SetFilter(dropNth(wire.UCWriteMiddle, 1, &dropped))
	const n = 3 * 4096
	src, dst := p.A.Buffer(t, n, 0x42), p.B.Buffer(t, n, 0)
	postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1})
	for i := range 2 {
		post(t, p.A.QP, &verbs.SendWR{Opcode: verbs.WRRDMAWriteWithImm, Imm: uint32(i), SGList: []verbs.SGE{src.SGE(0, n)},
			RemoteAddr: dst.Addr(), RKey: dst.RKey()})
	}
	wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]
	expectWC(t, wc, verbs.WC{WRID: 1, Status: verbs.WCSuccess, Opcode: verbs.WCRecvRDMAWithImm, ByteLen: n, Imm: 1,
		Flags: verbs.WCFlagWithImm, QPNum: p.B.QP.QPN(), SrcQP: p.A.QP.QPN()})
	if !bytes.Equal(dst.Bytes(), src.Bytes()) || dropped.Load() != 1 {
		t.Fatalf("data differs, or %d packets dropped", dropped.Load())
	}
}

// TestUCSendQueueError posts a UC send whose lkey fails: it completes with
// LOC_PROT_ERR, the QP enters SQE and flushes the sends behind it, the
// receive side keeps working, and a modify back to RTS resumes sending.
func TestUCSendQueueError(t *testing.T) {
	for _, typ := range []verbs.QPType{verbs.QPTypeUC, verbs.QPTypeUD} {
		t.Run(typ.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Type: typ})
			good := p.A.Buffer(t, 64, 1)
			gone := p.A.Buffer(t, 64, 2)
			sge := gone.SGE(0, 64)
			if err := gone.Close(); err != nil {
				t.Fatal(err)
			}
			wr := func(id uint64, s verbs.SGE) *verbs.SendWR {
				return &verbs.SendWR{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{s},
					AH: p.A.AH, RemoteQPN: p.A.PeerQPN, RemoteQKey: verbstest.DefaultQKey}
			}
			bad := wr(1, sge)
			bad.Next = wr(2, good.SGE(0, 64))
			post(t, p.A.QP, bad)
			wcs := verbstest.MustPoll(t, p.A.SendCQ, 2)
			if wcs[0].WRID != 1 || wcs[0].Status != verbs.WCLocProtErr || wcs[1].WRID != 2 || wcs[1].Status != verbs.WCWRFlushErr {
				t.Fatalf("completions %+v", wcs)
			}
			if st := p.A.QP.State(); st != verbs.QPStateSQE {
				t.Fatalf("state %v, want SQE", st)
			}
			post(t, p.A.QP, wr(3, good.SGE(0, 64)))
			if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.WRID != 3 || wc.Status != verbs.WCWRFlushErr {
				t.Fatalf("posted in SQE: %+v", wc)
			}
			// B sends to A, which still receives in SQE.
			n := 64
			if typ == verbs.QPTypeUD {
				n += grh
			}
			postRecv(t, p.A.QP, &verbs.RecvWR{WRID: 9, SGList: []verbs.SGE{p.A.Buffer(t, n, 0).SGE(0, n)}})
			src := p.B.Buffer(t, 64, 3)
			post(t, p.B.QP, &verbs.SendWR{Opcode: verbs.WRSend, SGList: []verbs.SGE{src.SGE(0, 64)},
				AH: p.B.AH, RemoteQPN: p.B.PeerQPN, RemoteQKey: verbstest.DefaultQKey})
			if wc := verbstest.MustPoll(t, p.A.RecvCQ, 1)[0]; wc.WRID != 9 || wc.Status != verbs.WCSuccess {
				t.Fatalf("receive in SQE: %+v", wc)
			}
			a := verbs.QPAttr{State: verbs.QPStateRTS}
			if err := p.A.QP.Modify(&a, verbs.QPAttrState); err != nil {
				t.Fatal(err)
			}
			post(t, p.A.QP, wr(4, good.SGE(0, 64)))
			if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.WRID != 4 || wc.Status != verbs.WCSuccess {
				t.Fatalf("after SQE -> RTS: %+v", wc)
			}
		})
	}
}

// freshQP creates a QP of type typ on side s, in RESET, closed when the
// test ends.
func freshQP(tb testing.TB, s *verbstest.Side, typ verbs.QPType) *verbs.QP {
	tb.Helper()
	qp, err := s.PD.CreateQP(&verbs.QPInitAttr{Type: typ, SendCQ: s.SendCQ, RecvCQ: s.RecvCQ,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { qp.Close() })
	return qp
}
