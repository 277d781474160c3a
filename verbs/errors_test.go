package verbs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// expectFlushed checks that n more completions on cq are WR_FLUSH_ERR with
// the given WR ids, in order.
func expectFlushed(t *testing.T, cq *verbs.CQ, ids ...uint64) {
	t.Helper()
	for i, wc := range verbstest.MustPoll(t, cq, len(ids)) {
		if wc.Status != verbs.WCWRFlushErr || wc.WRID != ids[i] {
			t.Errorf("completion %d: %+v, want WR %d flushed", i, wc, ids[i])
		}
	}
}

// TestRemoteAccessErrors checks each responder-side key failure: the
// requester's WQE completes with the status, the ones behind it are
// flushed, and the responder's QP is in the error state.
func TestRemoteAccessErrors(t *testing.T) {
	cases := []struct {
		name   string
		access verbs.AccessFlags // of the target region
		op     verbs.WROpcode
		rkey   func(*verbs.MR) verbs.RKey
		offset uint64
		n      int
		want   verbs.WCStatus
	}{
		{"write bad rkey", rwra, verbs.WRRDMAWrite, func(m *verbs.MR) verbs.RKey { return m.RKey() ^ 0x100 }, 0, 16, verbs.WCRemAccessErr},
		{"write stale tag", rwra, verbs.WRRDMAWrite, func(m *verbs.MR) verbs.RKey { return m.RKey() ^ 1 }, 0, 16, verbs.WCRemAccessErr},
		{"write out of bounds", rwra, verbs.WRRDMAWrite, (*verbs.MR).RKey, 60, 16, verbs.WCRemAccessErr},
		{"read out of bounds", rwra, verbs.WRRDMARead, (*verbs.MR).RKey, 0, 65, verbs.WCRemAccessErr},
		{"write without REMOTE_WRITE", verbs.AccessLocalWrite | verbs.AccessRemoteRead, verbs.WRRDMAWrite, (*verbs.MR).RKey, 0, 8, verbs.WCRemAccessErr},
		{"read without REMOTE_READ", verbs.AccessLocalWrite | verbs.AccessRemoteWrite, verbs.WRRDMARead, (*verbs.MR).RKey, 0, 8, verbs.WCRemAccessErr},
		{"atomic without REMOTE_ATOMIC", verbs.AccessLocalWrite | verbs.AccessRemoteWrite, verbs.WRAtomicFetchAndAdd, (*verbs.MR).RKey, 0, 8, verbs.WCRemAccessErr},
		{"atomic bad rkey", rwra, verbs.WRAtomicCmpAndSwp, func(m *verbs.MR) verbs.RKey { return 0 }, 0, 8, verbs.WCRemAccessErr},
	}
	for _, link := range links {
		for _, c := range cases {
			t.Run(link.String()+"/"+c.name, func(t *testing.T) {
				p := verbstest.New(t, verbstest.Options{Link: link})
				target, err := p.B.PD.RegMR(make([]byte, 64), c.access)
				if err != nil {
					t.Fatal(err)
				}
				local := p.A.Buffer(t, 128, 1)
				wr := &verbs.SendWR{WRID: 1, Opcode: c.op, SGList: []verbs.SGE{local.SGE(0, c.n)},
					RemoteAddr: target.Addr() + c.offset, RKey: c.rkey(target)}
				wr.Next = &verbs.SendWR{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled}
				post(t, p.A.QP, wr)
				if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.WRID != 1 || wc.Status != c.want {
					t.Fatalf("completion %+v, want WR 1 with %v", wc, c.want)
				}
				expectFlushed(t, p.A.SendCQ, 2)
				if p.A.QP.State() != verbs.QPStateErr {
					t.Errorf("requester QP in %v, want ERR", p.A.QP.State())
				}
				waitState(t, p.B.QP, verbs.QPStateErr)
				if got := p.B.Dev.Counters().Get(verbs.NAKSent); got != 1 {
					t.Errorf("responder sent %d NAKs, want 1", got)
				}
			})
		}
	}
}

const rwra = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic

func waitState(t *testing.T, qp *verbs.QP, want verbs.QPState) {
	t.Helper()
	for i := 0; qp.State() != want; i++ {
		if i == 1000 {
			t.Fatalf("QP state %v, want %v", qp.State(), want)
		}
		sleepBriefly()
	}
}

// TestQPAccessFlags checks a responder QP that does not allow the
// operation at all: rxe answers NAK Invalid Request (doc/protocol.md §12.3 step 3).
func TestQPAccessFlags(t *testing.T) {
	o := verbs.DefaultConnectOptions()
	o.Access = verbs.AccessLocalWrite
	p := verbstest.New(t, verbstest.Options{ConnectB: &o})
	target := p.B.Buffer(t, 64, 0)
	local := p.A.Buffer(t, 64, 0)
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{local.SGE(0, 8)},
		RemoteAddr: target.Addr(), RKey: target.RKey()})
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCRemInvReqErr {
		t.Fatalf("completion %+v, want remote invalid request", wc)
	}
}

func TestLocalProtectionError(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	local := p.A.Buffer(t, 64, 0)
	postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{p.B.Buffer(t, 64, 0).SGE(0, 64)}})
	bad := local.SGE(0, 8)
	bad.LKey ^= 0x8000_0000 // a table index no region has; never key 0, which posting refuses
	post(t, p.A.QP, &verbs.SendWR{WRID: 7, Opcode: verbs.WRSend, SGList: []verbs.SGE{bad},
		Next: &verbs.SendWR{WRID: 8, Opcode: verbs.WRSend, SGList: []verbs.SGE{local.SGE(0, 8)}}})
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.WRID != 7 || wc.Status != verbs.WCLocProtErr {
		t.Fatalf("completion %+v, want WR 7 with local protection error", wc)
	}
	expectFlushed(t, p.A.SendCQ, 8)
	// A READ into a region without LOCAL_WRITE is a local protection error too.
	p = verbstest.New(t, verbstest.Options{})
	ro, err := p.A.PD.RegMR(make([]byte, 64), 0) // local read only
	if err != nil {
		t.Fatal(err)
	}
	remote := p.B.Buffer(t, 64, 3)
	post(t, p.A.QP, &verbs.SendWR{WRID: 9, Opcode: verbs.WRRDMARead, SGList: []verbs.SGE{ro.SGE(0, 64)},
		RemoteAddr: remote.Addr(), RKey: remote.RKey()})
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCLocProtErr {
		t.Fatalf("completion %+v, want local protection error", wc)
	}
}

func TestPostErrors(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	local := p.A.Buffer(t, 64, 0)
	for _, c := range []struct {
		name string
		wr   verbs.SendWR
		want error
	}{
		{"unaligned atomic", verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd, SGList: []verbs.SGE{local.SGE(0, 8)}, RemoteAddr: 0x1004}, verbs.ErrAtomicAlign},
		{"atomic of 4 bytes", verbs.SendWR{Opcode: verbs.WRAtomicCmpAndSwp, SGList: []verbs.SGE{local.SGE(0, 4)}, RemoteAddr: 0x1000}, verbs.ErrAtomicLength},
		{"bad opcode", verbs.SendWR{Opcode: 42}, verbs.ErrBadOpcode},
		{"too many SGEs", verbs.SendWR{Opcode: verbs.WRSend, SGList: make([]verbs.SGE, 5)}, verbs.ErrTooManySGE},
		{"inline READ", verbs.SendWR{Opcode: verbs.WRRDMARead, Flags: verbs.SendInline}, verbs.ErrInlineOpcode},
		{"inline too big", verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline, SGList: []verbs.SGE{local.SGE(0, 64), local.SGE(0, 64)}}, verbs.ErrInlineSize},
	} {
		err := p.A.QP.PostSend(&c.wr)
		var pe *verbs.PostError
		if !errors.Is(err, c.want) || !errors.As(err, &pe) || pe.Index != 0 {
			t.Errorf("%s: %v, want %v at index 0", c.name, err, c.want)
		}
	}
	// Wrong state: a fresh QP in RESET accepts neither sends nor receives.
	qp, err := p.A.PD.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: p.A.SendCQ, RecvCQ: p.A.RecvCQ,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	if err != nil {
		t.Fatal(err)
	}
	// The error says which state the QP is in and which it needs.
	if err := qp.PostSend(&verbs.SendWR{Opcode: verbs.WRSend}); !errors.Is(err, verbs.ErrQPState) ||
		!strings.HasSuffix(err.Error(), ": the QP is in RESET, sends need RTS or later") {
		t.Errorf("post send in RESET: %v", err)
	}
	if err := qp.PostRecv(&verbs.RecvWR{}); !errors.Is(err, verbs.ErrQPState) ||
		!strings.HasSuffix(err.Error(), ": the QP is in RESET, receives need INIT or later") {
		t.Errorf("post recv in RESET: %v", err)
	}
}

func TestRNRRetryExceeded(t *testing.T) {
	o := verbs.DefaultConnectOptions()
	o.RNRRetry = 0
	p := verbstest.New(t, verbstest.Options{Connect: &o})
	local := p.A.Buffer(t, 8, 0)
	post(t, p.A.QP, &verbs.SendWR{WRID: 3, Opcode: verbs.WRSend, SGList: []verbs.SGE{local.SGE(0, 8)}})
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.WRID != 3 || wc.Status != verbs.WCRNRRetryExcErr {
		t.Fatalf("completion %+v, want RNR retry exceeded", wc)
	}
	if n := p.B.Dev.Counters().Get(verbs.SendRNRErr); n != 1 {
		t.Errorf("responder sent %d RNR NAKs, want 1", n)
	}
	if n := p.A.Dev.Counters().Get(verbs.RetryRNRExceededErr); n != 1 {
		t.Errorf("retry_rnr_exceeded_err = %d, want 1", n)
	}
}

// TestRNRRecovers posts the receive late: the requester waits out RNR NAKs
// and the message arrives intact.
func TestRNRRecovers(t *testing.T) {
	o := verbs.DefaultConnectOptions()
	o.MinRNRTimer = 1 // 10 µs
	p := verbstest.New(t, verbstest.Options{Connect: &o})
	src, dst := p.A.Buffer(t, 10000, 9), p.B.Buffer(t, 10000, 0)
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, 10000)}})
	for p.B.Dev.Counters().Get(verbs.SendRNRErr) == 0 {
		sleepBriefly()
	}
	postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 2, SGList: []verbs.SGE{dst.SGE(0, 10000)}})
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCSuccess {
		t.Fatalf("send completion %+v", wc)
	}
	if wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]; wc.Status != verbs.WCSuccess || string(dst.Bytes()) != string(src.Bytes()) {
		t.Fatalf("receive %+v, or bytes differ", wc)
	}
}

// TestPeerVanished closes the responder's device: the requester retries
// retry_cnt times on its local ACK timeout, then fails with RETRY_EXC_ERR.
func TestPeerVanished(t *testing.T) {
	o := verbs.DefaultConnectOptions()
	o.Timeout, o.RetryCnt = 8, 3 // ≈1 ms
	p := verbstest.New(t, verbstest.Options{Connect: &o})
	local := p.A.Buffer(t, 64, 0)
	remote := p.B.Buffer(t, 64, 0)
	p.B.Dev.Close()
	post(t, p.A.QP, &verbs.SendWR{WRID: 4, Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{local.SGE(0, 64)},
		RemoteAddr: remote.Addr(), RKey: remote.RKey(),
		Next: &verbs.SendWR{WRID: 5, Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{local.SGE(0, 64)}, RemoteAddr: remote.Addr(), RKey: remote.RKey()}})
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.WRID != 4 || wc.Status != verbs.WCRetryExcErr {
		t.Fatalf("completion %+v, want WR 4 with transport retry counter exceeded", wc)
	}
	expectFlushed(t, p.A.SendCQ, 5)
	c := p.A.Dev.Counters()
	if c.Get(verbs.CompleterRetryErr) != 3 || c.Get(verbs.RetryExceededErr) != 1 || c.Get(verbs.LocalACKTimeout) != 4 {
		t.Errorf("retries %d, exceeded %d, timeouts %d; want 3, 1, 4", c.Get(verbs.CompleterRetryErr),
			c.Get(verbs.RetryExceededErr), c.Get(verbs.LocalACKTimeout))
	}
}

// TestFlushOnError moves a QP with queued receives to ERR by modify: every
// receive is flushed, and so is anything posted afterwards.
func TestFlushOnError(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	buf := p.B.Buffer(t, 64, 0)
	for i := range 3 {
		postRecv(t, p.B.QP, &verbs.RecvWR{WRID: uint64(10 + i), SGList: []verbs.SGE{buf.SGE(0, 64)}})
	}
	if err := p.B.QP.Modify(&verbs.QPAttr{State: verbs.QPStateErr}, verbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	expectFlushed(t, p.B.RecvCQ, 10, 11, 12)
	postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 13})
	post(t, p.B.QP, &verbs.SendWR{WRID: 14, Opcode: verbs.WRSend})
	expectFlushed(t, p.B.RecvCQ, 13)
	expectFlushed(t, p.B.SendCQ, 14)
}
