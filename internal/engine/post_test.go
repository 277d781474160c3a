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
}

func (b *countingBind) Send(msgs []conn.Message) (int, error) {
	b.mu.Lock()
	b.sends = append(b.sends, len(msgs))
	b.mu.Unlock()
	return b.Bind.Send(msgs)
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
	var cb *countingBind
	r := newPktRig(t, func(cfg *DeviceConfig, c *QPCap) {
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
