package verbs_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// srqRig is n RC connections from side A to side B whose B QPs all
// receive through one SRQ into one CQ.
type srqRig struct {
	p      *verbstest.Pair
	srq    *verbs.SRQ
	recvCQ *verbs.CQ // B's, shared by its QPs
	sendCQ *verbs.CQ // A's, shared by its QPs
	a, b   []*verbs.QP
	src    *verbs.MR // A's data
	dst    *verbs.MR // B's receive buffers, slot bytes each
	slot   int
}

func newSRQRig(t *testing.T, o verbstest.Options, n int, attr verbs.SRQAttr) *srqRig {
	t.Helper()
	p := verbstest.New(t, o)
	r := &srqRig{p: p, slot: 256}
	var err error
	if r.srq, err = p.B.PD.CreateSRQ(&attr); err != nil {
		t.Fatal(err)
	}
	if r.recvCQ, err = p.B.Dev.CreateCQ(1024); err != nil {
		t.Fatal(err)
	}
	if r.sendCQ, err = p.A.Dev.CreateCQ(1024); err != nil {
		t.Fatal(err)
	}
	c := verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}
	for i := range n {
		a, err := p.A.PD.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: r.sendCQ, RecvCQ: r.sendCQ, Cap: c})
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.B.PD.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: r.recvCQ, RecvCQ: r.recvCQ, Cap: c, SRQ: r.srq})
		if err != nil {
			t.Fatal(err)
		}
		psnA, psnB := uint32(100*i), uint32(100*i+50)
		if err := a.ConnectRC(psnA, b.Endpoint(psnB), verbs.DefaultConnectOptions()); err != nil {
			t.Fatal(err)
		}
		if err := b.ConnectRC(psnB, a.Endpoint(psnA), verbs.DefaultConnectOptions()); err != nil {
			t.Fatal(err)
		}
		r.a, r.b = append(r.a, a), append(r.b, b)
	}
	r.src = p.A.Buffer(t, 64*r.slot, 0x3c)
	r.dst = p.B.Buffer(t, 1024*r.slot, 0)
	return r
}

// postRecvs posts receive WRs with ids from..to−1 to the SRQ, one slot each.
func (r *srqRig) postRecvs(t *testing.T, from, to int) {
	t.Helper()
	for id := from; id < to; id++ {
		if err := r.srq.PostRecv(&verbs.RecvWR{WRID: uint64(id), SGList: []verbs.SGE{r.dst.SGE(id*r.slot, r.slot)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// send posts a SEND of n bytes from A's QP i, taken from its slot i.
func (r *srqRig) send(t *testing.T, i, n int, id uint64) {
	t.Helper()
	post(t, r.a[i], &verbs.SendWR{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{r.src.SGE(i*r.slot, n)}})
}

// checkRecv verifies a receive completion: its QP is B's QP i of the
// sender, and the bytes in its slot are the sender's.
func (r *srqRig) checkRecv(t *testing.T, wc verbs.WC, n int) (sender int) {
	t.Helper()
	sender = -1
	for i, b := range r.b {
		if b.QPN() == wc.QPNum {
			sender = i
		}
	}
	if wc.Status != verbs.WCSuccess || wc.Opcode != verbs.WCRecv || wc.ByteLen != uint32(n) || sender < 0 ||
		wc.SrcQP != r.a[sender].QPN() {
		t.Fatalf("receive completion %+v", wc)
	}
	got := r.dst.Bytes()[int(wc.WRID)*r.slot:][:n]
	if want := r.src.Bytes()[sender*r.slot:][:n]; !bytes.Equal(got, want) {
		t.Fatalf("WR %d from QP %d: bytes differ", wc.WRID, sender)
	}
	return sender
}

// TestSRQShared: several QPs, sending at once from their own goroutines,
// consume one SRQ; every receive completion names the QP the message came
// in on, and its slot holds that sender's bytes. On a lossy link the
// retransmitted SENDs take no second receive. The lossy case runs in the
// virtual time of a synctest bubble: its recovery waits on retransmission
// timers, which a loaded machine (the race detector on two busy cores)
// once stretched past the wait for the completions.
func TestSRQShared(t *testing.T) {
	lossy := memconn.Impairments{Loss: 0.03, Duplicate: 0.03, Reorder: 0.03, Seed: 12}
	for _, o := range []verbstest.Options{{Link: verbstest.Mem}, {Link: verbstest.UDP}, {Link: verbstest.Mem, Impairments: lossy}} {
		name := o.Link.String()
		if o.Impairments == (memconn.Impairments{}) {
			t.Run(name, func(t *testing.T) { testSRQShared(t, o) })
			continue
		}
		t.Run(name+"-lossy", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testSRQShared(t, o) })
		})
	}
}

func testSRQShared(t *testing.T, o verbstest.Options) {
	const nqp, each, n = 4, 40, 200
	r := newSRQRig(t, o, nqp, verbs.SRQAttr{MaxWR: nqp * each, MaxSGE: 1})
	r.postRecvs(t, 0, nqp*each)
	var wg sync.WaitGroup
	for i := range nqp {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				if err := r.a[i].PostSend(&verbs.SendWR{WRID: uint64(k), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
					SGList: []verbs.SGE{r.src.SGE(i*r.slot, n)}}); err != nil {
					t.Error(err)
					return
				}
				if k%8 == 7 {
					time.Sleep(time.Millisecond) // the send queue holds 64
				}
			}
		}()
	}
	wg.Wait()
	per := make([]int, nqp)
	seen := map[uint64]bool{}
	for _, wc := range verbstest.MustPoll(t, r.recvCQ, nqp*each) {
		per[r.checkRecv(t, wc, n)]++
		if seen[wc.WRID] {
			t.Fatalf("WR %d completed twice", wc.WRID)
		}
		seen[wc.WRID] = true
	}
	for i, k := range per {
		if k != each {
			t.Errorf("QP %d received %d messages, want %d", i, k, each)
		}
	}
	for _, wc := range verbstest.MustPoll(t, r.sendCQ, nqp*each) {
		if wc.Status != verbs.WCSuccess {
			t.Fatalf("send completion %+v", wc)
		}
	}
	a, b := r.p.A.Dev.Counters(), r.p.B.Dev.Counters()
	if o.Impairments != (memconn.Impairments{}) && a.Get(verbs.RetransmittedPkts)+b.Get(verbs.DuplicateRequest) == 0 {
		t.Error("the lossy link caused no retransmission or duplicate")
	}
}

// TestSRQEmptyRNR: a SEND to a QP whose SRQ is empty is answered with an
// RNR NAK; once a receive is posted the retried SEND lands.
func TestSRQEmptyRNR(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			r := newSRQRig(t, verbstest.Options{Link: link}, 2, verbs.SRQAttr{MaxWR: 8})
			r.send(t, 1, 100, 9)
			waitCounter(t, r.p.B.Dev, verbs.SendRNRErr, 1)
			if n, err := r.recvCQ.Poll(make([]verbs.WC, 1)); n != 0 || err != nil {
				t.Fatalf("a receive completed with the SRQ empty: %d, %v", n, err)
			}
			r.postRecvs(t, 3, 4)
			r.checkRecv(t, verbstest.MustPoll(t, r.recvCQ, 1)[0], 100)
			wc := verbstest.MustPoll(t, r.sendCQ, 1)[0]
			if wc.Status != verbs.WCSuccess || wc.WRID != 9 {
				t.Errorf("send completion %+v", wc)
			}
			if c := r.p.A.Dev.Counters(); c.Get(verbs.RcvdRNRErr) == 0 {
				t.Errorf("requester counted no RNR NAK")
			}
		})
	}
}

// TestSRQLimit: the armed limit fires once, when a message leaves fewer
// receive requests than the limit, and then reads 0; it fires again only
// when armed again.
func TestSRQLimit(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			r := newSRQRig(t, verbstest.Options{Link: link}, 2, verbs.SRQAttr{MaxWR: 16})
			log := logEvents(r.p.B.Dev)
			r.postRecvs(t, 0, 8)
			if err := r.srq.Modify(&verbs.SRQAttr{SRQLimit: 4}, verbs.SRQLimit); err != nil {
				t.Fatal(err)
			}
			if a, err := r.srq.Query(); err != nil || a != (verbs.SRQAttr{MaxWR: 16, MaxSGE: 1, SRQLimit: 4}) {
				t.Fatalf("query: %+v, %v", a, err)
			}
			// 8 → 4 posted: not below the limit.
			for k := range 4 {
				r.send(t, k%2, 10, uint64(k))
			}
			for _, wc := range verbstest.MustPoll(t, r.recvCQ, 4) {
				r.checkRecv(t, wc, 10)
			}
			if a, _ := r.srq.Query(); a.SRQLimit != 4 {
				t.Fatalf("limit %d after 4 of 8 taken, want still armed at 4", a.SRQLimit)
			}
			// 4 → 3: fires, disarms; 3 → 0: nothing more.
			for k := range 4 {
				r.send(t, k%2, 10, uint64(k))
			}
			for _, wc := range verbstest.MustPoll(t, r.recvCQ, 4) {
				r.checkRecv(t, wc, 10)
			}
			ev := log.wait(t, verbs.EventSRQLimitReached, 1)[0]
			if ev.SRQ != r.srq || ev.QP != nil || ev.CQ != nil {
				t.Errorf("event %+v does not name the SRQ", ev)
			}
			if a, _ := r.srq.Query(); a.SRQLimit != 0 {
				t.Errorf("limit %d after the event, want 0 (disarmed)", a.SRQLimit)
			}
			// Armed again at 2 with 4 posted: fires when 1 is left.
			r.postRecvs(t, 8, 12)
			if err := r.srq.Modify(&verbs.SRQAttr{SRQLimit: 2}, verbs.SRQLimit); err != nil {
				t.Fatal(err)
			}
			for k := range 3 {
				r.send(t, 0, 10, uint64(k))
			}
			for _, wc := range verbstest.MustPoll(t, r.recvCQ, 3) {
				r.checkRecv(t, wc, 10)
			}
			log.wait(t, verbs.EventSRQLimitReached, 2)
			if err := r.p.B.Dev.Close(); err != nil {
				t.Fatal(err)
			}
			if k := log.count(verbs.EventSRQLimitReached); k != 2 {
				t.Errorf("%d limit events, want 2", k)
			}
		})
	}
}

// TestSRQResize: growing an SRQ keeps what it holds, in order; shrinking
// below the requests posted, or a limit not below the size, is refused.
func TestSRQResize(t *testing.T) {
	r := newSRQRig(t, verbstest.Options{}, 1, verbs.SRQAttr{MaxWR: 4})
	r.postRecvs(t, 0, 3)
	wantErr(t, "shrink below posted", r.srq.Modify(&verbs.SRQAttr{MaxWR: 2}, verbs.SRQMaxWR), verbs.ErrInvalidArgument, "modify SRQ")
	wantErr(t, "limit = max_wr", r.srq.Modify(&verbs.SRQAttr{SRQLimit: 4}, verbs.SRQLimit), verbs.ErrInvalidArgument, "modify SRQ")
	if err := r.srq.Modify(&verbs.SRQAttr{MaxWR: 100}, verbs.SRQMaxWR); err != nil {
		t.Fatal(err)
	}
	if a, _ := r.srq.Query(); a.MaxWR != 128 {
		t.Errorf("max_wr %d after resizing to 100, want 128", a.MaxWR)
	}
	r.postRecvs(t, 3, 100)
	for k := range 100 {
		r.send(t, 0, 20, uint64(k))
		if k%32 == 31 {
			verbstest.MustPoll(t, r.sendCQ, 32)
		}
	}
	for k, wc := range verbstest.MustPoll(t, r.recvCQ, 100) {
		r.checkRecv(t, wc, 20)
		if wc.WRID != uint64(k) {
			t.Fatalf("completion %d is WR %d: the SRQ's order was not kept", k, wc.WRID)
		}
	}
}

// TestSRQLifecycle: an SRQ with QPs on it refuses to close (EBUSY), as
// does its PD; a QP on an SRQ refuses PostRecv; a closed SRQ refuses
// posts, queries and new QPs.
func TestSRQLifecycle(t *testing.T) {
	o := newObjects(t)
	srq, err := o.pd.CreateSRQ(&verbs.SRQAttr{MaxWR: 4, MaxSGE: 2})
	if err != nil {
		t.Fatal(err)
	}
	attr := &verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: o.cq, RecvCQ: o.cq, Cap: verbs.QPCap{MaxSendWR: 4}, SRQ: srq}
	qp, err := o.pd.CreateQP(attr)
	if err != nil {
		t.Fatal(err)
	}
	if c := qp.Cap(); c.MaxRecvWR != 0 || c.MaxRecvSGE != 0 {
		t.Errorf("QP on an SRQ reports receive capacities %+v", c)
	}
	toInit(t, qp)
	err = qp.PostRecv(&verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{o.mr.SGE(0, 8)}})
	var pe *verbs.PostError
	if !errors.As(err, &pe) || !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Errorf("post recv on a QP on an SRQ: %v", err)
	}
	wantErr(t, "too many SGEs", srq.PostRecv(&verbs.RecvWR{SGList: make([]verbs.SGE, 3)}), verbs.ErrTooManySGE, "post SRQ recv")
	wantErr(t, "close SRQ with a QP", srq.Close(), verbs.ErrBusy, "destroy SRQ")
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.qp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.mr.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "close PD with an SRQ", o.pd.Close(), verbs.ErrBusy, "close PD")
	for i := range 2 {
		if err := srq.Close(); err != nil {
			t.Fatalf("close SRQ %d: %v", i+1, err)
		}
	}
	wantErr(t, "post to a closed SRQ", srq.PostRecv(&verbs.RecvWR{WRID: 1}), verbs.ErrClosed, "post SRQ recv")
	_, err = srq.Query()
	wantErr(t, "query a closed SRQ", err, verbs.ErrClosed, "query SRQ")
	wantErr(t, "modify a closed SRQ", srq.Modify(&verbs.SRQAttr{SRQLimit: 1}, verbs.SRQLimit), verbs.ErrClosed, "modify SRQ")
	_, err = o.pd.CreateQP(attr)
	wantErr(t, "create QP on a closed SRQ", err, verbs.ErrClosed, "create QP")
	if err := o.pd.Close(); err != nil {
		t.Errorf("close PD after its SRQ: %v", err)
	}
	_, err = o.pd.CreateSRQ(&verbs.SRQAttr{MaxWR: 1})
	wantErr(t, "create SRQ in a closed PD", err, verbs.ErrClosed, "create SRQ")
}

// TestSRQBadAttr: sizes out of range are refused.
func TestSRQBadAttr(t *testing.T) {
	o := newObjects(t)
	for _, a := range []verbs.SRQAttr{{}, {MaxWR: 1 << 20}, {MaxWR: 4, MaxSGE: 1000}, {MaxWR: 4, SRQLimit: 4}} {
		_, err := o.pd.CreateSRQ(&a)
		if err == nil {
			t.Errorf("create SRQ %+v succeeded", a)
		}
	}
	_, err := o.pd.CreateSRQ(nil)
	wantErr(t, "nil attr", err, verbs.ErrInvalidArgument, "create SRQ")
}

// TestLastWQEReached: a QP on an SRQ moved to the error state raises
// LAST_WQE_REACHED; the SRQ's requests stay for the other QPs.
func TestLastWQEReached(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			r := newSRQRig(t, verbstest.Options{Link: link}, 2, verbs.SRQAttr{MaxWR: 8})
			log := logEvents(r.p.B.Dev)
			r.postRecvs(t, 0, 2)
			if err := r.b[0].Modify(&verbs.QPAttr{State: verbs.QPStateErr}, verbs.QPAttrState); err != nil {
				t.Fatal(err)
			}
			ev := log.wait(t, verbs.EventQPLastWQEReached, 1)[0]
			if ev.QP != r.b[0] {
				t.Errorf("event names QP %v, want B's QP 0", ev.QP)
			}
			for k := range 2 {
				r.send(t, 1, 30, uint64(k))
			}
			for _, wc := range verbstest.MustPoll(t, r.recvCQ, 2) {
				if r.checkRecv(t, wc, 30) != 1 {
					t.Errorf("completion on the wrong QP: %+v", wc)
				}
			}
		})
	}
}

func TestSRQName(t *testing.T) {
	for _, c := range []struct {
		e    verbs.EventType
		want string
	}{{verbs.EventSRQLimitReached, "SRQ limit reached"}, {verbs.EventQPLastWQEReached, "last WQE reached"}} {
		if got := fmt.Sprint(c.e); got != c.want {
			t.Errorf("%d prints %q, want %q", c.e, got, c.want)
		}
	}
}
