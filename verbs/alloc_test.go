package verbs_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// pollOne spins until one completion arrives; it does not allocate.
func pollOne(tb testing.TB, cq *verbs.CQ, wcs []verbs.WC) {
	for i := 0; ; i++ {
		n, err := cq.Poll(wcs[:1])
		if err != nil {
			tb.Fatal(err)
		}
		if n == 1 {
			if wcs[0].Status != verbs.WCSuccess {
				tb.Fatalf("completion %+v", wcs[0])
			}
			return
		}
		if i > 50_000_000 {
			tb.Fatal("no completion")
		}
		runtime.Gosched()
	}
}

// TestSteadyStateAllocations holds the data path to zero allocations: a
// SEND, a WRITE and a READ round trip — post, the requester, the link, the
// receive path, responder, ACKs, completer and poll on both sides —
// allocate nothing once warmed up.
func TestSteadyStateAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items and allocates; .ci/run runs this test without -race")
	}
	p := verbstest.New(t, verbstest.Options{})
	wcs := make([]verbs.WC, 1)
	round := sendWriteRead(t, p, 6000, func(cq *verbs.CQ) { pollOne(t, cq, wcs) })
	expectNoAllocs(t, "SEND+WRITE+READ round trip", round)
}

// TestWaitAllocations holds CQ.Wait over UDP to zero allocations, on one
// processor, where it receives for the device itself (doc/design.md §4):
// a SEND and a WRITE and a READ, each waited for.
func TestWaitAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items and allocates; .ci/run runs this test without -race")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP})
	wcs := make([]verbs.WC, 1)
	ctx := context.Background()
	round := sendWriteRead(t, p, 64, func(cq *verbs.CQ) {
		if _, err := cq.Wait(ctx, wcs); err != nil || wcs[0].Status != verbs.WCSuccess {
			t.Fatalf("Wait: %v, %+v", err, wcs[0])
		}
	})
	expectNoAllocs(t, "SEND+WRITE+READ round trip waited for over UDP", round)
}

// sendWriteRead returns a round of a SEND, a WRITE and a READ of n bytes
// from p.A to p.B, each completion taken with wait.
func sendWriteRead(t *testing.T, p *verbstest.Pair, n int, wait func(*verbs.CQ)) func() {
	src, dst := p.A.Buffer(t, 8192, 1), p.B.Buffer(t, 8192, 2)
	send := &verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, n)}}
	recv := &verbs.RecvWR{SGList: []verbs.SGE{dst.SGE(0, 8192)}}
	write := &verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, n)},
		RemoteAddr: dst.Addr(), RKey: dst.RKey()}
	read := &verbs.SendWR{Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, n)},
		RemoteAddr: dst.Addr(), RKey: dst.RKey()}
	return func() {
		if err := p.B.QP.PostRecv(recv); err != nil {
			t.Fatal(err)
		}
		for _, wr := range []*verbs.SendWR{send, write, read} {
			if err := p.A.QP.PostSend(wr); err != nil {
				t.Fatal(err)
			}
			wait(p.A.SendCQ)
		}
		wait(p.B.RecvCQ)
	}
}

// expectNoAllocs runs round until warm, then fails the test if it
// allocates.
func expectNoAllocs(t *testing.T, what string, round func()) {
	t.Helper()
	for range 200 {
		round()
	}
	if n := testing.AllocsPerRun(500, round); n != 0 {
		t.Errorf("%v allocations per %s, want 0", n, what)
	}
}

// TestUnackedAllocations holds UC and UD to zero allocations: a UC SEND
// and WRITE with immediate, and a UD SEND with immediate — post, the
// requester, the link, the receive path with UD's GRH, the responders and
// poll on both sides — allocate nothing once warmed up.
func TestUnackedAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items and allocates; .ci/run runs this test without -race")
	}
	for _, typ := range []verbs.QPType{verbs.QPTypeUC, verbs.QPTypeUD} {
		t.Run(typ.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Type: typ})
			n := 6000
			wrs := []*verbs.SendWR{{Opcode: verbs.WRSendWithImm}, {Opcode: verbs.WRRDMAWriteWithImm}}
			if typ == verbs.QPTypeUD {
				n, wrs = 4000, wrs[:1]
			}
			src, dst := p.A.Buffer(t, 8192, 1), p.B.Buffer(t, 8192, 2)
			wcs := make([]verbs.WC, 1)
			recv := &verbs.RecvWR{SGList: []verbs.SGE{dst.SGE(0, 8192)}}
			for _, wr := range wrs {
				wr.Flags, wr.SGList, wr.RemoteAddr, wr.RKey = verbs.SendSignaled, []verbs.SGE{src.SGE(0, n)}, dst.Addr(), dst.RKey()
				wr.AH, wr.RemoteQPN, wr.RemoteQKey = p.A.AH, p.A.PeerQPN, verbstest.DefaultQKey
			}
			round := func() {
				for _, wr := range wrs {
					if err := p.B.QP.PostRecv(recv); err != nil {
						t.Fatal(err)
					}
					if err := p.A.QP.PostSend(wr); err != nil {
						t.Fatal(err)
					}
					pollOne(t, p.A.SendCQ, wcs)
					pollOne(t, p.B.RecvCQ, wcs)
				}
			}
			expectNoAllocs(t, typ.String()+" round trip", round)
		})
	}
}
