package verbs_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// sendTimes records, in the bubble's virtual time, when packets of op
// enter the fabric; drop makes the fabric lose them.
type sendTimes struct {
	mu    sync.Mutex
	times []time.Time
}

func (s *sendTimes) watch(p *verbstest.Pair, op wire.Opcode, drop bool) {
	p.Net.SetFilter(func(d *memconn.Datagram) memconn.Verdict {
		if pk := wire.Packet(d.Data); pk.Validate() == nil && pk.Opcode() == op {
			s.mu.Lock()
			s.times = append(s.times, time.Now())
			s.mu.Unlock()
			if drop {
				return memconn.Drop
			}
		}
		return memconn.Deliver
	})
}

func (s *sendTimes) gaps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var g []time.Duration
	for i := 1; i < len(s.times); i++ {
		g = append(g, s.times[i].Sub(s.times[i-1]))
	}
	return g
}

// TestRNRTimerVirtual: after each RNR NAK the requester waits the
// responder's RNR timer (code 14 = 1.28 ms) before sending again, and gives
// up after rnr_retry retries.
func TestRNRTimerVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := verbs.DefaultConnectOptions()
		o.MinRNRTimer, o.RNRRetry = 14, 3
		p := verbstest.New(t, verbstest.Options{Connect: &o})
		var s sendTimes
		s.watch(p, wire.RCSendOnly, false)
		local := p.A.Buffer(t, 8, 0)
		post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, SGList: []verbs.SGE{local.SGE(0, 8)}})
		if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCRNRRetryExcErr {
			t.Fatalf("completion %+v", wc)
		}
		gaps := s.gaps()
		if len(gaps) != 3 {
			t.Fatalf("%d sends after the first, want 3 (rnr_retry)", len(gaps))
		}
		rnr := wire.RNRTimer(14).Duration()
		for i, g := range gaps {
			if g < rnr || g > rnr+time.Millisecond {
				t.Errorf("retry %d after %v, want the RNR timer %v", i+1, g, rnr)
			}
		}
	})
}

// TestLocalACKTimeoutVirtual: against a peer that never answers, the
// requester retransmits every local ACK timeout (14 = 67.1 ms) retry_cnt
// times, then fails the WQE with RETRY_EXC_ERR one more timeout later.
func TestLocalACKTimeoutVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := verbs.DefaultConnectOptions()
		o.Timeout, o.RetryCnt = 14, 3
		p := verbstest.New(t, verbstest.Options{Connect: &o})
		var s sendTimes
		s.watch(p, wire.RCWriteOnly, true)
		local, remote := p.A.Buffer(t, 64, 0), p.B.Buffer(t, 64, 0)
		start := time.Now()
		post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{local.SGE(0, 64)},
			RemoteAddr: remote.Addr(), RKey: remote.RKey()})
		if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCRetryExcErr {
			t.Fatalf("completion %+v", wc)
		}
		timeout, _ := ib.LocalACKTimeout(14)
		if el := time.Since(start); el < 4*timeout || el > 4*timeout+10*time.Millisecond {
			t.Errorf("failed after %v, want 4 timeouts (%v)", el, 4*timeout)
		}
		gaps := s.gaps()
		if len(gaps) != 3 {
			t.Fatalf("%d retransmissions, want 3", len(gaps))
		}
		for i, g := range gaps {
			if g < timeout || g > timeout+time.Millisecond {
				t.Errorf("retransmission %d after %v, want %v", i+1, g, timeout)
			}
		}
	})
}

// TestInfiniteRNRRetryVirtual: with rnr_retry 7 the requester keeps
// waiting, even for seconds, and the message goes through once a receive
// is posted.
func TestInfiniteRNRRetryVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := verbs.DefaultConnectOptions()
		o.MinRNRTimer, o.RNRRetry = 20, 7 // 10.24 ms
		p := verbstest.New(t, verbstest.Options{Connect: &o})
		src, dst := p.A.Buffer(t, 100, 5), p.B.Buffer(t, 100, 0)
		post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, 100)}})
		time.Sleep(3 * time.Second) // ~290 RNR rounds
		if n := p.B.Dev.Counters().Get(verbs.SendRNRErr); n < 250 {
			t.Fatalf("%d RNR NAKs in 3 s, want about 290", n)
		}
		postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 2, SGList: []verbs.SGE{dst.SGE(0, 100)}})
		if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCSuccess {
			t.Fatalf("completion %+v", wc)
		}
		if string(dst.Bytes()) != string(src.Bytes()) {
			t.Fatal("data differs")
		}
	})
}
