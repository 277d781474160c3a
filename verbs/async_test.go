package verbs_test

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/leakcheck"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// eventLog collects a device's asynchronous events until its channel
// closes.
type eventLog struct {
	mu      sync.Mutex
	evs     []verbs.AsyncEvent
	changed chan struct{}
	done    chan struct{}
}

func logEvents(d *verbs.Device) *eventLog {
	l := &eventLog{changed: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ev := range d.AsyncEvents() {
			l.mu.Lock()
			l.evs = append(l.evs, ev)
			l.mu.Unlock()
			select {
			case l.changed <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

// of returns the events of type typ so far.
func (l *eventLog) of(typ verbs.EventType) []verbs.AsyncEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var r []verbs.AsyncEvent
	for _, ev := range l.evs {
		if ev.Type == typ {
			r = append(r, ev)
		}
	}
	return r
}

func (l *eventLog) count(typ verbs.EventType) int { return len(l.of(typ)) }

// wait returns the events of type typ once there are n.
func (l *eventLog) wait(t *testing.T, typ verbs.EventType, n int) []verbs.AsyncEvent {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		if evs := l.of(typ); len(evs) >= n {
			return evs
		}
		select {
		case <-l.changed:
		case <-l.done:
			if evs := l.of(typ); len(evs) < n {
				t.Fatalf("device closed with %d %v events, want %d", len(evs), typ, n)
			}
		case <-timeout.C:
			t.Fatalf("%d %v events, want %d", l.count(typ), typ, n)
		}
	}
}

// all waits for the channel to close and returns every event.
func (l *eventLog) all(t *testing.T) []verbs.AsyncEvent {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(10 * time.Second):
		t.Fatal("event channel not closed")
	}
	return l.evs
}

// TestPortEvents: a device's first event is PORT_ACTIVE, its last, after
// Close, PORT_ERR; then the channel closes.
func TestPortEvents(t *testing.T) {
	o := newObjects(t)
	l := logEvents(o.dev)
	if err := o.dev.Close(); err != nil {
		t.Fatal(err)
	}
	evs := l.all(t)
	if len(evs) < 2 || evs[0] != (verbs.AsyncEvent{Type: verbs.EventPortActive, Port: 1}) ||
		evs[len(evs)-1] != (verbs.AsyncEvent{Type: verbs.EventPortErr, Port: 1}) {
		t.Errorf("events %+v, want PORT_ACTIVE first and PORT_ERR last", evs)
	}
	if got := fmt.Sprint(evs[0]); got != "port active (port 1)" {
		t.Errorf("PORT_ACTIVE prints %q", got)
	}
}

// TestDeviceFatal: a link that closes under the device raises PORT_ERR
// and DEVICE_FATAL.
func TestDeviceFatal(t *testing.T) {
	leakcheck.Check(t)
	l, err := memconn.NewNetwork(memconn.Options{}).Listen(netip.MustParseAddrPort("10.0.0.1:4791"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := verbs.OpenDevice(verbs.DeviceConfig{Bind: l})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	log := logEvents(d)
	l.Close()
	log.wait(t, verbs.EventDeviceFatal, 1)
	if k := log.count(verbs.EventPortErr); k != 1 {
		t.Errorf("%d PORT_ERR events, want 1", k)
	}
}

// TestCommEst: a QP in RTR raises COMM_EST at its first packet, once; a
// QP that reached RTS before any packet raises none.
func TestCommEst(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Link: link})
			q := p.Another(t, verbstest.Options{})
			logB := logEvents(p.B.Dev)
			// Take q.B back to RTR: reset and connect only that far.
			if err := q.B.QP.Modify(&verbs.QPAttr{State: verbs.QPStateReset}, verbs.QPAttrState); err != nil {
				t.Fatal(err)
			}
			ep := q.A.QP.Endpoint(1)
			mtu, _ := p.B.Dev.QueryPort(1)
			for _, s := range []struct {
				a verbs.QPAttr
				m verbs.QPAttrMask
			}{
				{verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1, AccessFlags: verbs.AccessLocalWrite},
					verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrAccessFlags},
				{verbs.QPAttr{State: verbs.QPStateRTR, PathMTU: mtu.ActiveMTU, DestQPN: ep.QPN, RQPSN: ep.PSN, MinRNRTimer: 12,
					AH: verbs.AHAttr{IsGlobal: true, DGID: ep.GID, PortNum: 1, DestPort: ep.Port}},
					verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN |
						verbs.QPAttrMaxDestRdAtomic | verbs.QPAttrMinRNRTimer},
			} {
				if err := q.B.QP.Modify(&s.a, s.m); err != nil {
					t.Fatal(err)
				}
			}
			src, dst := p.A.Buffer(t, 64, 7), p.B.Buffer(t, 64, 0)
			for k := range 3 {
				postRecv(t, q.B.QP, &verbs.RecvWR{WRID: uint64(k), SGList: []verbs.SGE{dst.SGE(0, 64)}})
				post(t, q.A.QP, &verbs.SendWR{WRID: uint64(k), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
					SGList: []verbs.SGE{src.SGE(0, 64)}})
				verbstest.MustPoll(t, q.A.SendCQ, 1)
				if wc := verbstest.MustPoll(t, q.B.RecvCQ, 1)[0]; wc.Status != verbs.WCSuccess || string(dst.Bytes()) != string(src.Bytes()) {
					t.Fatalf("receive %+v", wc)
				}
			}
			// And a message on the pair that was in RTS all along.
			postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{dst.SGE(0, 64)}})
			post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, SGList: []verbs.SGE{src.SGE(0, 64)}})
			verbstest.MustPoll(t, p.B.RecvCQ, 1)
			ev := logB.wait(t, verbs.EventCommEst, 1)[0]
			if ev.QP != q.B.QP {
				t.Errorf("COMM_EST names %v, want the QP in RTR", ev.QP)
			}
			if err := p.B.Dev.Close(); err != nil {
				t.Fatal(err)
			}
			logB.all(t)
			if k := logB.count(verbs.EventCommEst); k != 1 {
				t.Errorf("%d COMM_EST events, want 1", k)
			}
		})
	}
}

// TestQPErrorEvents: a WRITE with a bad rkey moves the responder's QP to
// ERR with QP_ACCESS_ERR, and the requester's, which gets the NAK, with
// QP_FATAL.
func TestQPErrorEvents(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Link: link})
			logA, logB := logEvents(p.A.Dev), logEvents(p.B.Dev)
			src, dst := p.A.Buffer(t, 64, 1), p.B.Buffer(t, 64, 0)
			post(t, p.A.QP, &verbs.SendWR{WRID: 5, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{src.SGE(0, 64)}, RemoteAddr: dst.Addr(), RKey: dst.RKey() + 1})
			if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCRemAccessErr {
				t.Fatalf("completion %+v, want REM_ACCESS_ERR", wc)
			}
			if ev := logB.wait(t, verbs.EventQPAccessErr, 1)[0]; ev.QP != p.B.QP {
				t.Errorf("QP_ACCESS_ERR names %v, want B's QP", ev.QP)
			}
			if ev := logA.wait(t, verbs.EventQPFatal, 1)[0]; ev.QP != p.A.QP {
				t.Errorf("QP_FATAL names %v, want A's QP", ev.QP)
			}
		})
	}
}

// TestCQErrEvent: a CQ that overruns raises CQ_ERR once.
func TestCQErrEvent(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Link: link})
			log := logEvents(p.B.Dev)
			cq, err := p.B.Dev.CreateCQ(1)
			if err != nil {
				t.Fatal(err)
			}
			b, err := p.B.PD.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
				Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
			if err != nil {
				t.Fatal(err)
			}
			q := p.Another(t, verbstest.Options{})
			a := q.A.QP
			if err := a.Modify(&verbs.QPAttr{State: verbs.QPStateReset}, verbs.QPAttrState); err != nil {
				t.Fatal(err)
			}
			if err := a.ConnectRC(1, b.Endpoint(2), verbs.DefaultConnectOptions()); err != nil {
				t.Fatal(err)
			}
			if err := b.ConnectRC(2, a.Endpoint(1), verbs.DefaultConnectOptions()); err != nil {
				t.Fatal(err)
			}
			src, dst := p.A.Buffer(t, 8, 1), p.B.Buffer(t, 8, 0)
			for k := range 3 {
				postRecv(t, b, &verbs.RecvWR{WRID: uint64(k), SGList: []verbs.SGE{dst.SGE(0, 8)}})
				post(t, a, &verbs.SendWR{WRID: uint64(k), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, 8)}})
			}
			verbstest.MustPoll(t, q.A.SendCQ, 3)
			if ev := log.wait(t, verbs.EventCQErr, 1)[0]; ev.CQ != cq {
				t.Errorf("CQ_ERR names %v, want the small CQ", ev.CQ)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if err := p.B.Dev.Close(); err != nil {
				t.Fatal(err)
			}
			log.all(t)
			if k := log.count(verbs.EventCQErr); k != 1 {
				t.Errorf("%d CQ_ERR events, want 1", k)
			}
		})
	}
}
