package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// countingBind records how many datagrams each Send of the device carried.
type countingBind struct {
	conn.Bind
	mu    sync.Mutex
	sends []int
	runs  int // RunLimit's cap if not 0
}

func (b *countingBind) Send(msgs []conn.Message) (int, error) {
	b.mu.Lock()
	b.sends = append(b.sends, len(msgs))
	b.mu.Unlock()
	return b.Bind.Send(msgs)
}

// RunLimit makes the bind a conn.RunLimiter with a UDP socket's GSO
// limits (64 datagrams, 65 507 bytes a send), or runs if set, so that
// turns end where its runs would.
func (b *countingBind) RunLimit(size int) int {
	n := max(1, min(64, 65507/max(size, 1)))
	if b.runs > 0 {
		n = min(n, b.runs)
	}
	return n
}

// calls returns the datagrams of each Send so far.
func (b *countingBind) calls() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.sends...)
}

// countingRig is a pktRig whose device sends through a countingBind, with
// room for maxSendWR send WQEs.
func countingRig(t *testing.T, maxSendWR uint32) (*pktRig, *countingBind) {
	return countingRigType(t, ib.QPTypeRC, maxSendWR)
}

func countingRigType(t *testing.T, typ ib.QPType, maxSendWR uint32) (*pktRig, *countingBind) {
	var cb *countingBind
	r := newPktRigType(t, typ, func(cfg *DeviceConfig, c *QPCap) {
		cb = &countingBind{Bind: cfg.Bind}
		cfg.Bind = cb
		c.MaxSendWR = maxSendWR
	})
	return r, cb
}

// sendWR is an unsignaled 8-byte SEND of letter(i), wr_id i.
func (r *pktRig) sendWR(i int) *SendWR {
	copy(r.region[sendOff+8*i:], letter(i))
	return &SendWR{WRID: uint64(i), Opcode: ib.WRSend,
		SGList: []SGE{{Addr: mem.AddrOf(r.region) + sendOff + 8*uint64(i), Length: 8, LKey: ib.LKey(r.key)}}}
}

// TestPostsBehindWorkCoalesce: a lone post is sent before PostSend
// returns; posts made while it is unacknowledged only ring the doorbell,
// and one later turn sends them all in one Send, in order, with their
// bytes.
func TestPostsBehindWorkCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 32
		r, cb := countingRig(t, 64)
		if _, err := r.qp.PostSend(r.sendWR(0)); err != nil {
			t.Fatal(err)
		}
		if got := cb.calls(); len(got) != 1 || got[0] != 1 {
			t.Fatalf("after a lone post: Sends %v, want [1] (sent inline)", got)
		}
		checkOut(t, r.sent(), []out{sendOnly(0, 0)})

		// Holding the QP's lock keeps a turn from running meanwhile, so
		// every post below must return without sending; a post that ran
		// the turn itself would block on the lock.
		r.qp.mu.Lock()
		var posted atomic.Bool
		go func() {
			for i := 1; i <= n; i++ {
				if _, err := r.qp.PostSend(r.sendWR(i)); err != nil {
					t.Error(err)
				}
			}
			posted.Store(true)
		}()
		spinUntil(t, &r.qp.mu, posted.Load, "a post behind unacknowledged work ran the turn inline")
		if got := cb.calls(); len(got) != 1 {
			t.Errorf("Sends before the turn: %v, want only the first", got)
		}
		r.qp.mu.Unlock()
		want := make([]out, n)
		for i := range want {
			want[i] = sendOnly(wire.PSN(i+1), i+1)
		}
		checkOut(t, r.sent(), want)
		if got := cb.calls(); len(got) != 2 || got[1] != n {
			t.Errorf("Sends %v, want [1 %d]: the %d posts in one", got, n, n)
		}
	})
}

// TestACKFollowsRequests: the coalesced ACK of a turn leaves after the
// turn's requests, in the same Send, so that a GSO link can carry both as
// one datagram (a run whose last segment is shorter).
func TestACKFollowsRequests(t *testing.T) {
	in := &pkt{op: wire.RCWriteOnly, psn: 0, ack: true, payload: letter(7), fill: rethAt(regionKey, 0, 8)}
	checkACKOrder(t, in, []out{sendOnly(0, 0), ack(0, 1)})
}

// TestACKOfReceiveLeadsRequests: when a message of the turn completed a
// receive, its ACK leaves ahead of the requests posted in the turn, still
// in the same Send: the answer to a message never overtakes the message's
// ACK (perftest's ib_send_lat -e hung on rxe when it did).
func TestACKOfReceiveLeadsRequests(t *testing.T) {
	in := &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: letter(7)}
	checkACKOrder(t, in, []out{ack(0, 1), sendOnly(0, 0)})
}

// checkACKOrder injects in while the QP's turn is held back, posts a SEND
// as the turn is about to run, and checks what the turn sent, in one
// Send.
func checkACKOrder(t *testing.T, in *pkt, want []out) {
	synctest.Test(t, func(t *testing.T) {
		r, cb := countingRig(t, 4)
		r.qp.mu.Lock()
		r.inject(t, in)
		// The receive loop takes the task and waits for the lock.
		spinUntil(t, &r.qp.mu, func() bool { return r.qp.task.state.Load() != taskIdle },
			"the receive loop never scheduled the QP")
		if _, err := r.qp.PostSend(r.sendWR(0)); err != nil {
			t.Fatal(err)
		}
		r.qp.mu.Unlock()
		checkOut(t, r.sent(), want)
		if got := cb.calls(); len(got) != 1 || got[0] != 2 {
			t.Errorf("Sends %v, want [2]: request and ACK together", got)
		}
	})
}

// spinUntil yields until cond holds; if it does not within a bounded
// number of yields it unlocks mu, which the caller holds, and fails.
// (Inside a synctest bubble a goroutine blocked on a mutex does not let
// virtual time move, so the wait counts yields, not time.)
func spinUntil(t *testing.T, mu *sync.Mutex, cond func() bool, fail string) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 1e6 {
			mu.Unlock()
			t.Fatal(fail)
		}
		runtime.Gosched()
	}
}

// TestPollerAnswersInTheACKsFlush: a turn that executed a request ends
// before its ACK and yields, so that a poller waiting for what the request
// did posts its answer, whose own turn sends answer and ACK in one Send —
// the latency path's one system call. One processor, as a pinned tool has:
// the poller runs only where the receiving goroutine yields. Which
// goroutine the scheduler runs after a yield is its choice (the race
// detector shuffles it on purpose), so each attempt must send the right
// packets, and one of a few attempts at least must send them together;
// without the yield none can, as the ACK leaves before the poller runs.
func TestPollerAnswersInTheACKsFlush(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, tc := range []struct {
		name string
		in   *pkt
		// arrived reports what the poller waits for: ib_write_lat spins on
		// the written byte (here the packet's count, which the race
		// detector lets a goroutine read), ib_send_lat on a receive
		// completion.
		arrived func(r *pktRig) bool
		want    []out // in this order when in one Send
	}{{
		name: "WRITE: the answer, then the ACK as the run's shorter last segment",
		in:   &pkt{op: wire.RCWriteOnly, psn: 0, ack: true, payload: letter(7), fill: rethAt(regionKey, 0, 8)},
		arrived: func(r *pktRig) bool {
			return r.dev.Counters()[RcvdPkts] > r.base[RcvdPkts]
		},
		want: []out{sendOnly(0, 0), ack(0, 1)},
	}, {
		name: "SEND completing a receive: its ACK first",
		in:   &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: letter(7)},
		arrived: func(r *pktRig) bool {
			n, err := r.cq.Poll(make([]WC, 1))
			return n == 1 && err == nil
		},
		want: []out{ack(0, 1), sendOnly(0, 0)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var tries [][]int
			for len(tries) < 20 && (len(tries) == 0 || len(tries[len(tries)-1]) != 1) {
				synctest.Test(t, func(t *testing.T) {
					r, cb := countingRig(t, 4)
					answered := make(chan error, 1)
					go func() {
						for !tc.arrived(r) {
							runtime.Gosched()
						}
						_, err := r.qp.PostSend(r.sendWR(0))
						answered <- err
					}()
					r.inject(t, tc.in)
					if err := <-answered; err != nil {
						t.Fatal(err)
					}
					got := r.sent()
					sends := cb.calls()
					tries = append(tries, sends)
					if len(sends) == 1 {
						checkOut(t, got, tc.want)
					} else {
						checkOut(t, got, []out{ack(0, 1), sendOnly(0, 0)}) // ACK, then the answer
					}
				})
			}
			if last := tries[len(tries)-1]; len(last) != 1 || last[0] != 2 {
				t.Errorf("Sends of each attempt %v: the answer and the ACK never left together", tries)
			}
		})
	}
}

// TestOwedACKOutlivesThePoller: a poller that saw a received message's
// completion in the yield before its ACK, and then modifies, destroys or
// closes, does not lose that ACK: the peer counts on it as from a
// responder that acknowledges on arrival (ibv_rc_pingpong's last
// iteration destroys at once, and its peer's last SEND went unacknowledged).
func TestOwedACKOutlivesThePoller(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, tc := range []struct {
		name string
		then func(r *pktRig) error
	}{
		{"destroy", func(r *pktRig) error { r.qp.Destroy(); return nil }},
		{"modify to RESET", func(r *pktRig) error {
			return r.qp.Modify(&QPAttr{State: ib.QPStateReset}, ib.QPAttrState)
		}},
		{"close the device", func(r *pktRig) error { return r.dev.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newPktRig(t)
				done := make(chan error, 1)
				go func() {
					wcs := make([]WC, 1)
					for n, _ := r.cq.Poll(wcs); n == 0; n, _ = r.cq.Poll(wcs) {
						runtime.Gosched()
					}
					done <- tc.then(r)
				}()
				r.inject(t, &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: letter(7)})
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				checkOut(t, r.sent(), []out{ack(0, 1)})
			})
		})
	}
}
