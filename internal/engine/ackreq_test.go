package engine

import (
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/goverbs/goverbs/internal/wire"
)

// TestAckRequests: until cleanPath packets went without a go-back-N the
// requester asks for an ACK at the end of every message; on a clean path
// only where the send queue ends or the window fills (and every ackEvery
// packets, which these short bursts do not reach); after a go-back-N at
// every message again.
func TestAckRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := countingRig(t, 64)
		next := 0
		// burst posts n 8-byte SENDs that queue behind one another (the
		// first of the QP's life goes alone) and returns "A" for each packet
		// sent with AckReq and "." for each without.
		burst := func(n int) string {
			if next == 0 {
				if _, err := r.qp.PostSend(r.sendWR(0)); err != nil {
					t.Fatal(err)
				}
				next, n = 1, n-1
			}
			r.qp.mu.Lock()
			var posted atomic.Bool
			go func() {
				for range n {
					if _, err := r.qp.PostSend(r.sendWR(next)); err != nil {
						t.Error(err)
					}
					next++
				}
				posted.Store(true)
			}()
			spinUntil(t, &r.qp.mu, posted.Load, "a post behind unacknowledged work ran the turn inline")
			r.qp.mu.Unlock()
			s := ""
			for _, p := range r.sent() {
				s += map[bool]string{true: "A", false: "."}[p.BTH().AckRequest()]
			}
			return s
		}
		setClean := func(n int) {
			r.qp.mu.Lock()
			r.qp.req.clean = n
			r.qp.mu.Unlock()
		}
		check := func(what, got, want string) {
			t.Helper()
			if got != want {
				t.Errorf("%s: AckReq per packet %s, want %s", what, got, want)
			}
		}

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
