package verbs_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

var links = []verbstest.Link{verbstest.Mem, verbstest.UDP}

// sizes are the message sizes the issue asks for around the 4096-byte MTU
// of both links, plus 1 MiB.
func sizes(mtu int) []int { return []int{0, 1, mtu - 1, mtu, mtu + 1, 3*mtu + 5, 1 << 20} }

func post(tb testing.TB, qp *verbs.QP, wr *verbs.SendWR) {
	tb.Helper()
	if err := qp.PostSend(wr); err != nil {
		tb.Fatalf("post send: %v", err)
	}
}

func postRecv(tb testing.TB, qp *verbs.QP, wr *verbs.RecvWR) {
	tb.Helper()
	if err := qp.PostRecv(wr); err != nil {
		tb.Fatalf("post recv: %v", err)
	}
}

// expectWC checks every meaningful field of a completion.
func expectWC(tb testing.TB, got, want verbs.WC) {
	tb.Helper()
	if got != want {
		tb.Errorf("completion\n got %+v\nwant %+v", got, want)
	}
}

func TestSendRecv(t *testing.T) {
	for _, link := range links {
		p := verbstest.New(t, verbstest.Options{Link: link})
		mtu := 4096
		for _, n := range sizes(mtu) {
			for _, imm := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%d/imm=%v", link, n, imm), func(t *testing.T) {
					src := p.A.Buffer(t, n, 0x5a)
					dst := p.B.Buffer(t, n+7, 0)
					clear(dst.Bytes())
					postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 77, SGList: []verbs.SGE{dst.SGE(0, n+7)}})
					wr := &verbs.SendWR{WRID: 11, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, n)}}
					if imm {
						wr.Opcode, wr.Imm = verbs.WRSendWithImm, 0xdeadbeef
					}
					post(t, p.A.QP, wr)
					expectWC(t, verbstest.MustPoll(t, p.A.SendCQ, 1)[0], verbs.WC{
						WRID: 11, Status: verbs.WCSuccess, Opcode: verbs.WCSend, ByteLen: uint32(n), QPNum: p.A.QP.QPN()})
					want := verbs.WC{WRID: 77, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: uint32(n),
						QPNum: p.B.QP.QPN(), SrcQP: p.A.QP.QPN()}
					if imm {
						want.Imm, want.Flags = 0xdeadbeef, verbs.WCFlagWithImm
					}
					expectWC(t, verbstest.MustPoll(t, p.B.RecvCQ, 1)[0], want)
					if !bytes.Equal(dst.Bytes()[:n], src.Bytes()[:n]) || !bytes.Equal(dst.Bytes()[n:], make([]byte, 7)) {
						t.Fatal("received bytes differ from the sent ones, or overran the message")
					}
				})
			}
		}
	}
}

func TestWrite(t *testing.T) {
	for _, link := range links {
		p := verbstest.New(t, verbstest.Options{Link: link})
		for _, n := range sizes(4096) {
			for _, imm := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%d/imm=%v", link, n, imm), func(t *testing.T) {
					src := p.A.Buffer(t, n, 0x33)
					dst := p.B.Buffer(t, n+16, 0)
					clear(dst.Bytes())
					wr := &verbs.SendWR{WRID: 5, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
						SGList: []verbs.SGE{src.SGE(0, n)}, RemoteAddr: dst.Addr() + 8, RKey: dst.RKey()}
					if imm {
						wr.Opcode, wr.Imm = verbs.WRRDMAWriteWithImm, 0x01020304
						postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 6}) // WRITE WITH IMM consumes a receive, no SGE needed
					}
					post(t, p.A.QP, wr)
					expectWC(t, verbstest.MustPoll(t, p.A.SendCQ, 1)[0], verbs.WC{
						WRID: 5, Status: verbs.WCSuccess, Opcode: verbs.WCRDMAWrite, ByteLen: uint32(n), QPNum: p.A.QP.QPN()})
					if imm {
						expectWC(t, verbstest.MustPoll(t, p.B.RecvCQ, 1)[0], verbs.WC{WRID: 6, Status: verbs.WCSuccess,
							Opcode: verbs.WCRecvRDMAWithImm, ByteLen: uint32(n), Imm: 0x01020304, Flags: verbs.WCFlagWithImm,
							QPNum: p.B.QP.QPN(), SrcQP: p.A.QP.QPN()})
					}
					got := dst.Bytes()
					if !bytes.Equal(got[8:8+n], src.Bytes()[:n]) || !bytes.Equal(got[:8], make([]byte, 8)) ||
						!bytes.Equal(got[8+n:], make([]byte, 8)) {
						t.Fatal("target bytes wrong or written outside the range")
					}
				})
			}
		}
	}
}

func TestRead(t *testing.T) {
	for _, link := range links {
		p := verbstest.New(t, verbstest.Options{Link: link})
		for _, n := range sizes(4096) {
			t.Run(fmt.Sprintf("%v/%d", link, n), func(t *testing.T) {
				remote := p.B.Buffer(t, n+3, 0x77)
				local := p.A.Buffer(t, n+2, 0)
				clear(local.Bytes())
				post(t, p.A.QP, &verbs.SendWR{WRID: 9, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
					SGList: []verbs.SGE{local.SGE(1, n)}, RemoteAddr: remote.Addr() + 3, RKey: remote.RKey()})
				expectWC(t, verbstest.MustPoll(t, p.A.SendCQ, 1)[0], verbs.WC{
					WRID: 9, Status: verbs.WCSuccess, Opcode: verbs.WCRDMARead, ByteLen: uint32(n), QPNum: p.A.QP.QPN()})
				got := local.Bytes()
				if !bytes.Equal(got[1:1+n], remote.Bytes()[3:]) || got[0] != 0 || got[n+1] != 0 {
					t.Fatal("read bytes differ, or the read overran its SGE")
				}
			})
		}
	}
}

func TestAtomics(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Link: link})
			remote := p.B.Buffer(t, 64, 0)
			local := p.A.Buffer(t, 16, 0)
			word := remote.Bytes()[8:16]
			binary.NativeEndian.PutUint64(word, 1000)
			ops := []struct {
				wr       verbs.SendWR
				op       verbs.WCOpcode
				old, now uint64
			}{
				{verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd, CompareAdd: 5}, verbs.WCFetchAdd, 1000, 1005},
				{verbs.SendWR{Opcode: verbs.WRAtomicCmpAndSwp, CompareAdd: 1005, Swap: 42}, verbs.WCCompSwap, 1005, 42},
				{verbs.SendWR{Opcode: verbs.WRAtomicCmpAndSwp, CompareAdd: 7, Swap: 99}, verbs.WCCompSwap, 42, 42},  // no swap
				{verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd, CompareAdd: ^uint64(0)}, verbs.WCFetchAdd, 42, 41}, // wraps
			}
			for i, o := range ops {
				wr := o.wr
				wr.WRID, wr.Flags = uint64(i), verbs.SendSignaled
				wr.SGList = []verbs.SGE{local.SGE(8, 8)}
				wr.RemoteAddr, wr.RKey = remote.Addr()+8, remote.RKey()
				post(t, p.A.QP, &wr)
				expectWC(t, verbstest.MustPoll(t, p.A.SendCQ, 1)[0], verbs.WC{
					WRID: uint64(i), Status: verbs.WCSuccess, Opcode: o.op, ByteLen: 8, QPNum: p.A.QP.QPN()})
				if got := binary.NativeEndian.Uint64(local.Bytes()[8:]); got != o.old {
					t.Errorf("op %d returned %d, want %d", i, got, o.old)
				}
				if got := binary.NativeEndian.Uint64(word); got != o.now {
					t.Errorf("op %d left %d in memory, want %d", i, got, o.now)
				}
			}
		})
	}
}

// TestMultiSGE gathers a message from three SGEs in two regions and
// scatters it into three others, across packet boundaries.
func TestMultiSGE(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Link: link})
			a1, a2 := p.A.Buffer(t, 5000, 1), p.A.Buffer(t, 3000, 2)
			b1, b2 := p.B.Buffer(t, 4000, 0), p.B.Buffer(t, 10000, 0)
			clear(b1.Bytes())
			clear(b2.Bytes())
			sg := []verbs.SGE{a1.SGE(10, 4990), a2.SGE(0, 3000), a1.SGE(0, 10)}
			var want []byte
			want = append(want, a1.Bytes()[10:]...)
			want = append(want, a2.Bytes()...)
			want = append(want, a1.Bytes()[:10]...)
			postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{b1.SGE(0, 4000), b2.SGE(100, 1), b2.SGE(200, 5000)}})
			post(t, p.A.QP, &verbs.SendWR{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: sg})
			verbstest.MustPoll(t, p.A.SendCQ, 1)
			if wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]; wc.Status != verbs.WCSuccess || wc.ByteLen != uint32(len(want)) {
				t.Fatalf("receive completion %+v", wc)
			}
			var got []byte
			got = append(got, b1.Bytes()...)
			got = append(got, b2.Bytes()[100])
			got = append(got, b2.Bytes()[200:200+len(want)-4001]...)
			if !bytes.Equal(got, want) {
				t.Fatal("scattered bytes differ")
			}

			// The same lists for WRITE (gather) and READ (scatter).
			clear(b2.Bytes())
			post(t, p.A.QP, &verbs.SendWR{WRID: 3, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: sg,
				RemoteAddr: b2.Addr(), RKey: b2.RKey()})
			verbstest.MustPoll(t, p.A.SendCQ, 1)
			if !bytes.Equal(b2.Bytes()[:len(want)], want) {
				t.Fatal("gathered WRITE differs")
			}
			clear(a1.Bytes())
			clear(a2.Bytes())
			post(t, p.A.QP, &verbs.SendWR{WRID: 4, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGList: sg,
				RemoteAddr: b2.Addr(), RKey: b2.RKey()})
			verbstest.MustPoll(t, p.A.SendCQ, 1)
			got = append(append(append([]byte(nil), a1.Bytes()[10:]...), a2.Bytes()...), a1.Bytes()[:10]...)
			if !bytes.Equal(got, want) {
				t.Fatal("scattered READ differs")
			}
		})
	}
}

// TestSendRecvCounters checks that rdma_sends and rdma_recvs count what
// rxe's do: completed SENDs, and successful receive completions (a SEND's
// or a WRITE WITH IMMEDIATE's), not every work request.
func TestSendRecvCounters(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{Link: verbstest.Mem})
	src := p.A.Buffer(t, 64, 0x11)
	dst := p.B.Buffer(t, 64, 0)
	for i, op := range []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm,
		verbs.WRRDMARead, verbs.WRAtomicFetchAndAdd, verbs.WRAtomicCmpAndSwp} {
		wr := &verbs.SendWR{WRID: uint64(i), Opcode: op, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, 8)},
			RemoteAddr: dst.Addr(), RKey: dst.RKey()}
		if op == verbs.WRSend || op == verbs.WRSendWithImm || op == verbs.WRRDMAWriteWithImm {
			postRecv(t, p.B.QP, &verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{dst.SGE(0, 64)}})
		}
		post(t, p.A.QP, wr)
		if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCSuccess {
			t.Fatalf("%v: %v", op, wc.Status)
		}
	}
	verbstest.MustPoll(t, p.B.RecvCQ, 3)
	if got := p.A.Dev.Counters().Get(verbs.RDMASends); got != 2 {
		t.Errorf("rdma_sends %d after 2 SENDs among 7 operations, want 2", got)
	}
	if got := p.B.Dev.Counters().Get(verbs.RDMARecvs); got != 3 {
		t.Errorf("rdma_recvs %d after 3 receive completions, want 3", got)
	}
	if got := p.B.Dev.Counters().Get(verbs.RDMASends) + p.A.Dev.Counters().Get(verbs.RDMARecvs); got != 0 {
		t.Errorf("the passive side counted sends or the active side receives: %d", got)
	}
}
