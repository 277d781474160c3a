package engine

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// sharedLink is a memconn link that shares its receiving, as a UDPBind
// does (conn.SharedReceiver), with a receive loop that never gets a
// datagram: each waits for a Progress to take it, so that a test sees
// what Progress does with it.
type sharedLink struct {
	conn.Bind
	gate      *sync.Mutex
	ready     chan conn.Message
	closed    chan struct{}
	closeOnce sync.Once
	sends     atomic.Int32 // calls of Send
}

func withSharedLink(cfg *DeviceConfig, _ *QPCap) {
	l := &sharedLink{Bind: cfg.Bind, ready: make(chan conn.Message, 64), closed: make(chan struct{})}
	go l.pump()
	cfg.Bind = l
}

// pump moves what the link receives to ready, until it closes.
func (l *sharedLink) pump() { receiveEach(l.Bind, func(m conn.Message) { l.ready <- m }) }

func (l *sharedLink) Coalesces() bool           { return true }
func (l *sharedLink) SetRecvGate(g *sync.Mutex) { l.gate = g }

// RecvCoalesced waits, without the gate, until the link closes.
func (l *sharedLink) RecvCoalesced([]conn.Message) (int, error) {
	l.gate.Unlock()
	<-l.closed
	l.gate.Lock()
	return 0, net.ErrClosed
}

func (l *sharedLink) TryRecvCoalesced(msgs []conn.Message) (int, error) {
	for n := range msgs {
		select {
		case m := <-l.ready:
			buf := msgs[n].Buf
			msgs[n] = m
			msgs[n].Buf, msgs[n].N = buf, copy(buf, m.Buf)
		default:
			return n, nil
		}
	}
	return len(msgs), nil
}

func (l *sharedLink) Send(msgs []conn.Message) (int, error) {
	l.sends.Add(1)
	return l.Bind.Send(msgs)
}

func (l *sharedLink) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Bind.Close()
}

// TestProgress: Device.Progress takes what the receive loop has not
// received, on the caller's goroutine, and runs the QP's turn there; the
// ACK that turn owes goes with an answer posted before the caller yields,
// or, when none comes, from the device worker afterwards, once either way.
// On one processor, where Progress pays: with more, the worker may send
// the ACK before the answer is posted.
func TestProgress(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	send := &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")}
	runRows(t, []row{{
		name:  "the loop does not receive: Progress does, and the worker sends the ACK owed",
		tweak: withSharedLink,
		steps: []step{
			{in: send},
			{progress: true, want: []out{ack(0, 1)}},
		},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 3}},
		counters: map[Counter]uint64{ACKSent: 1, RcvdPkts: 1},
	}, {
		name:  "an answer posted after Progress carries the ACK",
		tweak: withSharedLink,
		steps: []step{
			{in: send},
			{progress: true, post: sends(1), want: []out{ack(0, 1), sendOnly(0, 0)}},
			{in: inACK(0)},
			{progress: true},
		},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 3}, {1, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{ACKSent: 1, RcvdPkts: 2},
		check: func(t *testing.T, r *pktRig) {
			if n := r.dev.bind.(*sharedLink).sends.Load(); n != 1 {
				t.Errorf("the ACK and the answer took %d sends, want 1", n)
			}
		},
	}})
}

// TestProgressIdle: Progress on a link with nothing ready gets nothing and
// does not ask for a yield; over a link that does not share its receiving
// it asks for one.
func TestProgressIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t, withSharedLink)
		if got, yield := r.dev.Progress(); got || yield {
			t.Errorf("Progress with nothing ready = %v, %v; want false, false", got, yield)
		}
		plain := newPktRig(t)
		if got, yield := plain.dev.Progress(); got || !yield {
			t.Errorf("Progress over a link that does not share = %v, %v; want false, true", got, yield)
		}
	})
}

// TestProgressStream: after a receive of more packets than a ping-pong
// brings, Progress leaves the next streamBackoff calls to the receive
// loop, asking for a yield, and then receives again.
func TestProgressStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t, withSharedLink)
		junk := make([]byte, wire.BTHSize+wire.ICRCSize) // dropped as malformed or unknown: only their number matters
		for range pingPongPackets + 1 {
			if _, err := r.peer.Send([]conn.Message{{Buf: junk, Addr: r.dev.LocalAddr()}}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if got, yield := r.dev.Progress(); !got || yield {
			t.Fatalf("Progress with a stream's packets ready = %v, %v; want true, false", got, yield)
		}
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")})
		synctest.Wait()
		for i := range streamBackoff {
			if got, yield := r.dev.Progress(); got || !yield {
				t.Fatalf("call %d after the stream's receive = %v, %v; want false, true", i, got, yield)
			}
		}
		if got, _ := r.dev.Progress(); !got {
			t.Fatal("Progress did not receive again after the back-off")
		}
	})
}

// TestSettleOwed: the ACK a turn run by Progress left owed goes out from
// SettleOwed, on the poller's goroutine, before the device worker runs.
func TestSettleOwed(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t, withSharedLink)
		l := r.dev.bind.(*sharedLink)
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")})
		synctest.Wait()
		if got, _ := r.dev.Progress(); !got {
			t.Fatal("Progress received nothing")
		}
		if n := l.sends.Load(); n != 0 {
			t.Fatalf("%d sends before SettleOwed, want the ACK still owed", n)
		}
		r.dev.SettleOwed()
		if n := l.sends.Load(); n != 1 {
			t.Fatalf("%d sends after SettleOwed, want the ACK's", n)
		}
		checkOut(t, r.sent(), []out{ack(0, 1)})
	})
}

// TestSettleOwedAfterAnswer: once a post's turn has sent the answer with
// the ACK owed, SettleOwed runs no turn of the QP (it would find nothing
// to do), and the ACK went once.
func TestSettleOwedAfterAnswer(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t, withSharedLink)
		turns := 0
		turn := r.qp.task.turn
		r.qp.task.turn = func() turnEnd { turns++; return turn() }
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")})
		synctest.Wait()
		if got, _ := r.dev.Progress(); !got {
			t.Fatal("Progress received nothing")
		}
		if _, err := r.qp.PostSend(sends(1)(r)); err != nil {
			t.Fatal(err)
		}
		if turns != 2 {
			t.Fatalf("%d turns for the request and the answer, want 2", turns)
		}
		r.dev.SettleOwed()
		if turns != 2 {
			t.Errorf("SettleOwed ran %d more turns after the answer sent the ACK, want none", turns-2)
		}
		checkOut(t, r.sent(), []out{ack(0, 1), sendOnly(0, 0)})
	})
}
