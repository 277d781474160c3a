package verbs_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// manyQPs connects pairs QP pairs between two devices, has every pair's
// A side post ops signalled RDMA WRITEs of size bytes at once, waits for
// all their completions, checks that every byte arrived, and returns the
// time from the first post to the last completion. Setup (creating and
// connecting the QPs) is not timed. It logs the packet counters: on UDP a
// burst this large can overflow the socket buffer, and retransmissions
// then show what that cost.
func manyQPs(tb testing.TB, link verbstest.Link, pairs, ops, size int) time.Duration {
	tb.Helper()
	o := verbstest.Options{Link: link, CQSize: 2 * ops}
	p := verbstest.New(tb, o)
	qs := []*verbstest.Pair{p}
	for len(qs) < pairs {
		qs = append(qs, p.Another(tb, o))
	}
	total := pairs * ops * size
	src, dst := p.A.Buffer(tb, total, 1), p.B.Buffer(tb, total, 0)
	wr := verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, RKey: dst.RKey(),
		SGList: []verbs.SGE{{}}}
	start := time.Now()
	for i, q := range qs {
		for k := range ops {
			off := (i*ops + k) * size
			wr.SGList[0] = src.SGE(off, size)
			wr.RemoteAddr = dst.Addr() + uint64(off)
			if err := q.A.QP.PostSend(&wr); err != nil {
				tb.Fatalf("pair %d: post %d: %v", i, k, err)
			}
		}
	}
	for i, q := range qs {
		for _, wc := range verbstest.MustPoll(tb, q.A.SendCQ, ops) {
			if wc.Status != verbs.WCSuccess {
				tb.Fatalf("pair %d: WRITE: %v", i, wc.Status)
			}
		}
	}
	elapsed := time.Since(start)
	ca, cb := p.A.Dev.Counters(), p.B.Dev.Counters()
	tb.Logf("sent %d, received %d, retransmissions started %d, dropped %d",
		ca.Get(verbs.SentPkts), cb.Get(verbs.RcvdPkts), ca.Get(verbs.CompleterRetryErr), cb.Drops())
	if !bytes.Equal(dst.Bytes(), src.Bytes()) {
		tb.Fatal("the WRITEs did not all arrive intact")
	}
	return elapsed
}

// TestManyQPs: a thousand connected QP pairs on two devices, each with a
// few WRITEs in flight at once, deliver every byte in bounded time (item 5
// of issue 10: nothing in the engine — the QP table, the timer queue, the
// device worker — collapses with many QPs).
func TestManyQPs(t *testing.T) {
	if testing.Short() {
		t.Skip("a thousand QP pairs")
	}
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			const ops, size = 4, 1024
			pairs := 1000
			if raceEnabled {
				pairs = 100 // the detector makes setup slow; the logic is the same
			}
			elapsed := manyQPs(t, link, pairs, ops, size)
			t.Logf("%d pairs × %d WRITEs of %d B: %v, %.0f ops/s", pairs, ops, size, elapsed,
				float64(pairs*ops)/elapsed.Seconds())
			if elapsed > 20*time.Second {
				t.Fatalf("%d pairs took %v", pairs, elapsed)
			}
		})
	}
}

// BenchmarkManyQPs reports the WRITE rate of 1, 10, 100 and 1,000 QP pairs
// with a few WRITEs each in flight, over memconn and loopback UDP.
func BenchmarkManyQPs(b *testing.B) {
	for _, link := range links {
		for _, pairs := range []int{1, 10, 100, 1000} {
			b.Run(fmt.Sprintf("%v/%d", link, pairs), func(b *testing.B) {
				const ops, size = 4, 1024
				var elapsed time.Duration
				for b.Loop() {
					elapsed += manyQPs(b, link, pairs, ops, size)
				}
				b.ReportMetric(float64(b.N*pairs*ops)/elapsed.Seconds(), "ops/s")
			})
		}
	}
}
