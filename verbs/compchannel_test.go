package verbs_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// eventTimeout bounds a wait for an event that must come; reaching it
// fails the test (a lost event), it never measures speed.
const eventTimeout = 20 * time.Second

// getEvent takes the next event of ch, acknowledges it and fails the test
// unless it is cq's.
func getEvent(t *testing.T, ch *verbs.CompChannel, cq *verbs.CQ, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	got, err := ch.GetCQEvent(ctx)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got.AckEvents(1)
	if got != cq {
		t.Fatalf("%s: event of another CQ", what)
	}
}

func arm(t *testing.T, cq *verbs.CQ, solicitedOnly bool) {
	t.Helper()
	if err := cq.ReqNotify(solicitedOnly); err != nil {
		t.Fatal(err)
	}
}

// TestSolicitedEvent: SendSolicited sets BTH SE on the wire, and the
// receiver's solicited-only arm fires for that message and not for an
// unsolicited one. B's two CQs share a channel, whose events keep their
// order: B's send CQ, armed for any completion, gets its completion after
// the unsolicited receive, so its event comes first unless that receive
// fired the receive CQ wrongly. Over memconn and UDP, for SEND with and
// without immediate and WRITE with immediate; the bytes arrive intact.
func TestSolicitedEvent(t *testing.T) {
	for _, link := range []verbstest.Link{verbstest.Mem, verbstest.UDP} {
		for _, op := range []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWriteWithImm} {
			t.Run(fmt.Sprintf("%v/%v", link, op), func(t *testing.T) {
				p := verbstest.New(t, verbstest.Options{Link: link, CompChannel: true})
				src, dst := p.A.Buffer(t, 3000, 1), p.B.Buffer(t, 6000, 0)
				for i := range 2 {
					postRecv(t, p.B.QP, &verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{dst.SGE(3000*i, 3000)}})
				}
				send := func(i int, flags verbs.SendFlags) {
					post(t, p.A.QP, &verbs.SendWR{WRID: uint64(i), Opcode: op, Flags: verbs.SendSignaled | flags, Imm: uint32(i),
						SGList: []verbs.SGE{src.SGE(0, 3000)}, RemoteAddr: dst.Addr() + uint64(3000*i), RKey: dst.RKey()})
					verbstest.MustPoll(t, p.A.SendCQ, 1)
				}
				arm(t, p.B.RecvCQ, true)
				send(0, 0) // unsolicited: A's completion comes after B's receive turn
				arm(t, p.B.SendCQ, false)
				post(t, p.B.QP, &verbs.SendWR{WRID: 9, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
					SGList: []verbs.SGE{dst.SGE(0, 8)}, RemoteAddr: src.Addr() + 2000, RKey: src.RKey()})
				getEvent(t, p.B.Chan, p.B.SendCQ, "event after B's WRITE")
				send(1, verbs.SendSolicited)
				getEvent(t, p.B.Chan, p.B.RecvCQ, "event after the solicited message")
				for i, wc := range verbstest.MustPoll(t, p.B.RecvCQ, 2) {
					if wc.Status != verbs.WCSuccess || wc.ByteLen != 3000 {
						t.Errorf("receive %d: %+v", i, wc)
					}
				}
				if !bytes.Equal(dst.Bytes()[3000:], src.Bytes()) {
					t.Error("the solicited message's bytes differ")
				}
				verbstest.MustPoll(t, p.B.SendCQ, 1)
			})
		}
	}
}

// TestPollArmPollRace: the standard consumer loop — poll until empty, arm,
// poll once more, then sleep on the channel — never sleeps through a
// completion, however the completions race the arm. A streams SENDs while
// B consumes in that loop; a lost completion would leave B asleep until
// the test's bound. Over memconn and UDP, many rounds, both arm kinds
// (every message is solicited).
func TestPollArmPollRace(t *testing.T) {
	msgs := 3000
	if testing.Short() {
		msgs = 300
	}
	for _, link := range []verbstest.Link{verbstest.Mem, verbstest.UDP} {
		for _, solicitedOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/solicitedOnly=%v", link, solicitedOnly), func(t *testing.T) {
				p := verbstest.New(t, verbstest.Options{Link: link, CompChannel: true, BusyPoll: verbs.BusyPollOff})
				const depth = 32
				src, dst := p.A.Buffer(t, 8, 1), p.B.Buffer(t, 8*depth, 0)
				for i := range depth {
					postRecv(t, p.B.QP, &verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{dst.SGE(8*i, 8)}})
				}
				sent := make(chan error, 1)
				go func() { sent <- stream(p.A, src, msgs, depth) }()
				ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
				defer cancel()
				wcs := make([]verbs.WC, 8)
				got, sleeps := 0, 0
				for got < msgs {
					n, err := p.B.RecvCQ.Poll(wcs)
					if err == nil && n == 0 {
						if err = p.B.RecvCQ.ReqNotify(solicitedOnly); err == nil {
							n, err = p.B.RecvCQ.Poll(wcs)
						}
						if err == nil && n == 0 {
							var cq *verbs.CQ
							if cq, err = p.B.Chan.GetCQEvent(ctx); err == nil {
								cq.AckEvents(1)
								sleeps++
							}
						}
					}
					if err != nil {
						t.Fatalf("after %d of %d messages: %v", got, msgs, err)
					}
					for _, wc := range wcs[:n] {
						if wc.Status != verbs.WCSuccess || wc.ByteLen != 8 {
							t.Fatalf("receive %d: %+v", got, wc)
						}
						if v := dst.Bytes()[8*wc.WRID]; v != byte(got) {
							t.Fatalf("message %d holds %d", got, v)
						}
						got++
						postRecv(t, p.B.QP, &verbs.RecvWR{WRID: wc.WRID, SGList: []verbs.SGE{dst.SGE(8*int(wc.WRID), 8)}})
					}
				}
				if err := <-sent; err != nil {
					t.Fatal(err)
				}
				t.Logf("%d messages, %d sleeps on the channel", msgs, sleeps)
			})
		}
	}
}

// stream sends n solicited 8-byte SENDs from side s, message i carrying
// byte i, at most depth outstanding.
func stream(s *verbstest.Side, src *verbs.MR, n, depth int) error {
	wcs := make([]verbs.WC, depth)
	out := 0
	for i := 0; i < n || out > 0; {
		for ; i < n && out < depth; i++ {
			src.Bytes()[0] = byte(i) // inline: copied at post time
			err := s.QP.PostSend(&verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRSend,
				Flags: verbs.SendSignaled | verbs.SendSolicited | verbs.SendInline, SGList: []verbs.SGE{src.SGE(0, 8)}})
			if err != nil {
				return err
			}
			out++
		}
		k, err := s.SendCQ.Wait(context.Background(), wcs)
		if err != nil {
			return err
		}
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.WCSuccess {
				return fmt.Errorf("send %d: %v", wc.WRID, wc.Status)
			}
		}
		out -= k
	}
	return nil
}

// TestCompChannelLifecycle: the busy and closed rules of channels and
// the CQs on them, as libibverbs has them.
func TestCompChannelLifecycle(t *testing.T) {
	o := newObjects(t)
	ch, err := o.dev.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "arm a CQ without a channel", o.cq.ReqNotify(false), verbs.ErrInvalidArgument, "req notify CQ")
	_, err = openDevice(t).CreateCQWithChannel(4, ch)
	wantErr(t, "CQ on another device's channel", err, verbs.ErrInvalidArgument, "create CQ")
	_, err = o.dev.CreateCQWithChannel(4, nil)
	wantErr(t, "CQ on no channel", err, verbs.ErrInvalidArgument, "create CQ")

	flushOne := func() *verbs.CQ { return flushOne(t, o, ch) }

	// An event nobody took is dropped with its CQ.
	x := flushOne()
	if err := x.Close(); err != nil {
		t.Fatalf("close a CQ whose event nobody took: %v", err)
	}
	y := flushOne()
	wantErr(t, "close a channel with a CQ", ch.Close(), verbs.ErrBusy, "destroy completion channel")
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	var got *verbs.CQ
	select {
	case got = <-ch.Events():
	case <-ctx.Done():
		t.Fatal("no event for the flushed receive")
	}
	if got != y {
		t.Fatal("event of the closed CQ delivered")
	}
	if wc := verbstest.MustPoll(t, y, 1)[0]; wc.WRID != 5 || wc.Status != verbs.WCWRFlushErr {
		t.Errorf("flushed receive: %+v", wc)
	}
	wantErr(t, "close a CQ with an unacknowledged event", y.Close(), verbs.ErrBusy, "destroy CQ")
	y.AckEvents(1)
	if err := y.Close(); err != nil {
		t.Fatalf("close a CQ after acknowledging: %v", err)
	}
	wantErr(t, "arm a closed CQ", y.ReqNotify(false), verbs.ErrClosed, "req notify CQ")
	for i := range 2 {
		if err := ch.Close(); err != nil {
			t.Fatalf("close %d of an unused channel: %v", i+1, err)
		}
	}
	_, err = ch.GetCQEvent(ctx)
	wantErr(t, "get an event from a closed channel", err, verbs.ErrClosed, "get CQ event")
	_, err = o.dev.CreateCQWithChannel(4, ch)
	wantErr(t, "CQ on a closed channel", err, verbs.ErrClosed, "create CQ")
	if err := o.dev.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = o.dev.CreateCompChannel()
	wantErr(t, "channel on a closed device", err, verbs.ErrClosed, "create completion channel")
}

// flushOne makes an event on a new CQ of ch: a QP on it in INIT with one
// receive, moved to ERR, whose turn (run by Modify, nothing else runs the
// QP) flushes the receive. The QP is closed; the CQ holds the completion
// and its event is queued.
func flushOne(t *testing.T, o *objects, ch *verbs.CompChannel) *verbs.CQ {
	t.Helper()
	cq, err := o.dev.CreateCQWithChannel(4, ch)
	if err != nil {
		t.Fatal(err)
	}
	flushInto(t, o, cq)
	return cq
}

// flushInto arms cq and makes an event on it as flushOne does.
func flushInto(t *testing.T, o *objects, cq *verbs.CQ) {
	t.Helper()
	qp, err := o.pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	toInit(t, qp)
	postRecv(t, qp, &verbs.RecvWR{WRID: 5, SGList: []verbs.SGE{o.mr.SGE(0, 8)}})
	arm(t, cq, true) // a flush is a failed completion
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPStateErr}, verbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseRightAfterAck: a CQ whose events were all taken and
// acknowledged closes, however soon after the acknowledgement. The
// channel counts an event as taken once its receiver has it, and a
// receiver that acknowledged and closed before the channel had counted
// the event got ErrBusy, and left the channel unclosable (a perftest -e
// tool then left its forwarder behind, found by CI's leak check).
func TestCloseRightAfterAck(t *testing.T) {
	o := newObjects(t)
	ch, err := o.dev.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	for i := range 300 {
		cq := flushOne(t, o, ch)
		getEvent(t, ch, cq, "the flushed receive's event")
		if err := cq.Close(); err != nil {
			t.Fatalf("round %d: close right after acknowledging its one event: %v", i, err)
		}
	}
	// A close that fails, for an event taken and not acknowledged, keeps
	// the event the channel was offering meanwhile.
	cq := flushOne(t, o, ch)
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	if got, err := ch.GetCQEvent(ctx); err != nil || got != cq {
		t.Fatalf("first event: %v", err)
	}
	flushInto(t, o, cq)
	time.Sleep(time.Millisecond) // the forwarder offers the second event meanwhile, or will
	wantErr(t, "close with an event not acknowledged", cq.Close(), verbs.ErrBusy, "destroy CQ")
	getEvent(t, ch, cq, "the event offered while the close failed")
	cq.AckEvents(1)
	if err := cq.Close(); err != nil {
		t.Fatalf("close after acknowledging both events: %v", err)
	}
}

// TestCompChannelDeviceClose: closing the device delivers the events of
// the flush, then GetCQEvent reports ErrClosed.
func TestCompChannelDeviceClose(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{CompChannel: true})
	postRecv(t, p.A.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{p.A.Buffer(t, 8, 0).SGE(0, 8)}})
	arm(t, p.A.RecvCQ, true)
	if err := p.A.Dev.Close(); err != nil {
		t.Fatal(err)
	}
	getEvent(t, p.A.Chan, p.A.RecvCQ, "event of the close's flush")
	if wc := verbstest.MustPoll(t, p.A.RecvCQ, 1)[0]; wc.WRID != 1 || wc.Status != verbs.WCWRFlushErr {
		t.Errorf("flushed receive: %+v", wc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	_, err := p.A.Chan.GetCQEvent(ctx)
	wantErr(t, "get an event after the device closed", err, verbs.ErrClosed, "get CQ event")
}

// TestEventModeAllocations: consuming in event mode — arm, poll, sleep
// on the channel, acknowledge, poll — allocates nothing once warmed up.
func TestEventModeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items and allocates; .ci/run runs this test without -race")
	}
	p := verbstest.New(t, verbstest.Options{CompChannel: true})
	src, dst := p.A.Buffer(t, 64, 1), p.B.Buffer(t, 64, 2)
	send := &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, 64)}}
	recv := &verbs.RecvWR{WRID: 2, SGList: []verbs.SGE{dst.SGE(0, 64)}}
	wcs := make([]verbs.WC, 1)
	ctx := context.Background()
	round := func() {
		if err := p.B.QP.PostRecv(recv); err != nil {
			t.Fatal(err)
		}
		if err := p.B.RecvCQ.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
		if err := p.A.QP.PostSend(send); err != nil {
			t.Fatal(err)
		}
		for {
			if n, err := p.B.RecvCQ.Poll(wcs); err != nil || n == 1 {
				break
			}
			cq, err := p.B.Chan.GetCQEvent(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cq.AckEvents(1)
		}
		pollOne(t, p.A.SendCQ, wcs)
	}
	for range 100 {
		round()
	}
	if a := testing.AllocsPerRun(200, round); a != 0 {
		t.Errorf("%v allocations per event-mode round trip, want 0", a)
	}
}
