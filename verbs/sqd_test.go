package verbs_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/wire"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// TestSQDrained: a QP moved to SQD with EnSQDAsyncNotify finishes the
// message it had started, raises SQ_DRAINED once that one is complete (its
// completion is in the CQ when the event comes),
// starts nothing posted meanwhile until it is back in RTS, and a move to
// SQD without the notify raises nothing.
func TestSQDrained(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Link: link})
			logA := logEvents(p.A.Dev)
			const n = 16 << 10 // several packets at any path MTU
			src, dst := p.A.Buffer(t, 2*n, 5), p.B.Buffer(t, 2*n, 0)
			before := bytes.Clone(dst.Bytes())
			write := func(id uint64, off int) *verbs.SendWR {
				return &verbs.SendWR{WRID: id, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
					SGList: []verbs.SGE{src.SGE(off, n)}, RemoteAddr: dst.Addr() + uint64(off), RKey: dst.RKey()}
			}
			sqd := func(notify bool) {
				t.Helper()
				mask := verbs.QPAttrState
				if notify {
					mask |= verbs.QPAttrEnSQDAsyncNotify
				}
				if err := p.A.QP.Modify(&verbs.QPAttr{State: verbs.QPStateSQD, EnSQDAsyncNotify: notify}, mask); err != nil {
					t.Fatal(err)
				}
			}
			post(t, p.A.QP, write(0, 0))
			sqd(true)
			post(t, p.A.QP, write(1, n))

			ev := logA.wait(t, verbs.EventSQDrained, 1)[0]
			if ev.QP != p.A.QP {
				t.Errorf("SQ_DRAINED names %v, want the QP in SQD", ev.QP)
			}
			if got, want := ev.String(), fmt.Sprintf("send queue drained (QP 0x%06x)", uint32(p.A.QP.QPN())); got != want {
				t.Errorf("the event prints %q, want %q", got, want)
			}
			// The event follows the completion: it is in the CQ already.
			wcs := make([]verbs.WC, 2)
			if k, err := p.A.SendCQ.Poll(wcs); k != 1 || err != nil || wcs[0].WRID != 0 || wcs[0].Status != verbs.WCSuccess {
				t.Fatalf("at SQ_DRAINED the send CQ held %d completions (%v): %+v, want WRITE 0's", k, err, wcs[:k])
			}
			if !bytes.Equal(dst.Bytes()[:n], src.Bytes()[:n]) {
				t.Error("the WRITE started before SQD did not arrive whole")
			}
			if !bytes.Equal(dst.Bytes()[n:], before[n:]) {
				t.Error("the WRITE posted in SQD was started")
			}

			if err := p.A.QP.Modify(&verbs.QPAttr{State: verbs.QPStateRTS}, verbs.QPAttrState); err != nil {
				t.Fatal(err)
			}
			if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.WRID != 1 || wc.Status != verbs.WCSuccess {
				t.Fatalf("second completion %+v, want WRITE 1's", wc)
			}
			if !bytes.Equal(dst.Bytes()[n:], src.Bytes()[n:]) {
				t.Error("the WRITE posted in SQD did not arrive whole back in RTS")
			}

			sqd(false)
			if err := p.A.Dev.Close(); err != nil {
				t.Fatal(err)
			}
			logA.all(t)
			if k := logA.count(verbs.EventSQDrained); k != 1 {
				t.Errorf("%d SQ_DRAINED events, want 1", k)
			}
		})
	}
}

// TestSQDraining: Query reports SQDraining in SQD while a message the send
// queue started is unacknowledged (its ACKs lost here), and not once it
// completed, nor in RTS.
func TestSQDraining(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	var hold atomic.Bool
	var lost atomic.Int32
	hold.Store(true)
	p.Net.SetFilter(func(d *memconn.Datagram) memconn.Verdict {
		if pk := wire.Packet(d.Data); hold.Load() && pk.Validate() == nil && pk.Opcode() == wire.RCAcknowledge {
			lost.Add(1)
			return memconn.Drop
		}
		return memconn.Deliver
	})
	draining := func(want bool, when string) {
		t.Helper()
		a, err := p.A.QP.Query()
		if err != nil {
			t.Fatal(err)
		}
		if a.SQDraining != want {
			t.Errorf("%s: SQDraining %v in %v, want %v", when, a.SQDraining, a.State, want)
		}
	}
	const n = 64
	src, dst := p.A.Buffer(t, n, 7), p.B.Buffer(t, n, 0)
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{src.SGE(0, n)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
	draining(false, "in RTS with a WRITE outstanding")
	// The WRITE was executed once its ACK is lost.
	for deadline := time.Now().Add(10 * time.Second); lost.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the WRITE was not acknowledged")
		}
	}
	if err := p.A.QP.Modify(&verbs.QPAttr{State: verbs.QPStateSQD}, verbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	draining(true, "in SQD, the WRITE unacknowledged")
	hold.Store(false) // the tail probe's ACK gets through
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.WRID != 1 || wc.Status != verbs.WCSuccess {
		t.Fatalf("completion %+v, want the WRITE's", wc)
	}
	draining(false, "in SQD, the WRITE complete")
	if !bytes.Equal(dst.Bytes(), src.Bytes()) {
		t.Error("the WRITE's data did not arrive")
	}
}
