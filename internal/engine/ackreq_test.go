package engine

import (
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// ackBursts posts bursts of 8-byte SENDs on a rig and reports which of
// the packets sent asked for an ACK.
type ackBursts struct {
	t    *testing.T
	r    *pktRig
	next int
}

// burst posts n SENDs that queue behind one another (the first of the
// QP's life goes alone), each first passed to the mods with its place in
// the burst, and returns "A" for each packet sent with AckReq and "." for
// each without.
func (b *ackBursts) burst(n int, mods ...func(int, *SendWR)) string {
	r := b.r
	post := func(i int) {
		wr := r.sendWR(b.next)
		for _, mod := range mods {
			mod(i, wr)
		}
		if _, err := r.qp.PostSend(wr); err != nil {
			b.t.Error(err)
		}
		b.next++
	}
	first := 0
	if b.next == 0 {
		post(0)
		first = 1
	}
	r.qp.mu.Lock()
	var posted atomic.Bool
	go func() {
		for i := first; i < n; i++ {
			post(i)
		}
		posted.Store(true)
	}()
	spinUntil(b.t, &r.qp.mu, posted.Load, "a post behind unacknowledged work ran the turn inline")
	r.qp.mu.Unlock()
	s := ""
	for _, p := range r.sent() {
		s += map[bool]string{true: "A", false: "."}[p.BTH().AckRequest()]
	}
	return s
}

// setClean sets how many packets went without a go-back-N.
func (b *ackBursts) setClean(n int) {
	b.r.qp.mu.Lock()
	b.r.qp.req.clean = n
	b.r.qp.mu.Unlock()
}

func (b *ackBursts) check(what, got, want string) {
	b.t.Helper()
	if got != want {
		b.t.Errorf("%s: AckReq per packet %s, want %s", what, got, want)
	}
}

// TestAckRequests: until cleanPath packets went without a go-back-N the
// requester asks for an ACK at the end of every message; on a clean path
// only where the send queue ends or the window fills (and every ackEvery
// packets, which these short bursts do not reach); after a go-back-N at
// every message again.
func TestAckRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := countingRig(t, 64)
		b := &ackBursts{t: t, r: r}
		burst, setClean, check := b.burst, b.setClean, b.check
		check("a new connection", burst(6), "AAAAAA")
		setClean(cleanPath)
		check("a clean path", burst(6), ".....A")
		// The window (minWindow) fills: 12 in flight, and room for 4 more.
		r.qp.mu.Lock()
		r.qp.req.win.size = 16
		r.qp.mu.Unlock()
		check("a clean path at the window", burst(6), "...A")
		// A sequence NAK for PSN 12 (the first of that burst) makes the
		// requester go back, and the path is no longer clean.
		r.inject(t, &pkt{op: wire.RCAcknowledge, psn: 12, fill: withSyndrome(wire.NAKSyndrome(wire.NAKPSNSequenceError))})
		got := ""
		for _, p := range r.sent() {
			got += fmt.Sprintf("%d%s ", p.BTH().PSN(), map[bool]string{true: "A", false: "."}[p.BTH().AckRequest()])
		}
		// The NAK acknowledged PSNs up to 11 and the loss took the
		// window back to minWindow: the six left go again, each asking.
		check("the go-back-N after a sequence NAK", got, "12A 13A 14A 15A 16A 17A ")
		r.qp.mu.Lock()
		clean := r.qp.req.clean
		r.qp.mu.Unlock()
		if clean >= cleanPath {
			t.Errorf("after a go-back-N the path counts as clean (%d packets)", clean)
		}
	})
}

// TestAckRequestSignaled: on a clean path a signaled one-packet message
// asks for an ACK, as a poster bounded by its queue depth waits for its
// completion; a longer one does not, its packets asking every ackEvery.
func TestAckRequestSignaled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := countingRig(t, 64)
		b := &ackBursts{t: t, r: r}
		b.setClean(cleanPath)
		// The burst's first goes alone and asks, as does its last; between
		// them a signaled SEND of one packet and one of two.
		mark := func(i int, wr *SendWR) {
			switch i {
			case 1:
				wr.Flags |= ib.SendSignaled
			case 3:
				wr.Flags |= ib.SendSignaled
				wr.SGList[0].Length = 400 // two packets at the rig's path MTU of 256
			}
		}
		b.check("signaled SENDs of one packet and of two", b.burst(6, mark), "AA....A")
	})
}
