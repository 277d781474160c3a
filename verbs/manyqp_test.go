package verbs_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// manyQPs is pairs connected QP pairs between two devices, and a source
// and a target region with room for ops WRITEs of size bytes per pair.
type manyQPs struct {
	qs       []*verbstest.Pair
	src, dst *verbs.MR
	ops      int
	size     int
}

// newManyQPs creates and connects the pairs (the setup no run times).
func newManyQPs(tb testing.TB, link verbstest.Link, pairs, ops, size int) *manyQPs {
	tb.Helper()
	o := verbstest.Options{Link: link, CQSize: 2 * ops}
	p := verbstest.New(tb, o)
	m := &manyQPs{qs: []*verbstest.Pair{p}, ops: ops, size: size}
	for len(m.qs) < pairs {
		m.qs = append(m.qs, p.Another(tb, o))
	}
	m.src, m.dst = p.A.Buffer(tb, pairs*ops*size, 1), p.B.Buffer(tb, pairs*ops*size, 0)
	return m
}

// run has every pair's A side post its ops signalled RDMA WRITEs at once,
// waits for all their completions, checks that every byte arrived (the
// source holds a pattern of its own for each run, seed), and returns the
// time from the first post to the last completion. It logs the packet
// counters: on UDP a burst this large can overflow the socket buffer, and
// retransmissions then show what that cost.
func (m *manyQPs) run(tb testing.TB, seed byte) time.Duration {
	tb.Helper()
	src := m.src.Bytes()
	for i := range src {
		src[i] = byte(i*7) ^ seed
	}
	wr := verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, RKey: m.dst.RKey(),
		SGList: []verbs.SGE{{}}}
	start := time.Now()
	for i, q := range m.qs {
		for k := range m.ops {
			off := (i*m.ops + k) * m.size
			wr.SGList[0] = m.src.SGE(off, m.size)
			wr.RemoteAddr = m.dst.Addr() + uint64(off)
			if err := q.A.QP.PostSend(&wr); err != nil {
				tb.Fatalf("pair %d: post %d: %v", i, k, err)
			}
		}
	}
	for i, q := range m.qs {
		for _, wc := range verbstest.MustPoll(tb, q.A.SendCQ, m.ops) {
			if wc.Status != verbs.WCSuccess {
				tb.Fatalf("pair %d: WRITE: %v", i, wc.Status)
			}
		}
	}
	elapsed := time.Since(start)
	ca, cb := m.qs[0].A.Dev.Counters(), m.qs[0].B.Dev.Counters()
	tb.Logf("sent %d, received %d, retransmissions started %d, dropped %d",
		ca.Get(verbs.SentPkts), cb.Get(verbs.RcvdPkts), ca.Get(verbs.CompleterRetryErr), cb.Drops())
	if !bytes.Equal(m.dst.Bytes(), src) {
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
			elapsed := newManyQPs(t, link, pairs, ops, size).run(t, 1)
			t.Logf("%d pairs × %d WRITEs of %d B: %v, %.0f ops/s", pairs, ops, size, elapsed,
				float64(pairs*ops)/elapsed.Seconds())
			if elapsed > 20*time.Second {
				t.Fatalf("%d pairs took %v", pairs, elapsed)
			}
		})
	}
}

// TestQPMemory: a connected QP with small queues, which has sent and
// received, holds a few KiB of its own, not the room of its largest
// possible burst: its receive ring and transmit batch grow when a burst
// comes (a connected QP held 210 KiB, 160 of them its receive ring).
func TestQPMemory(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	pairs := 500
	if raceEnabled {
		pairs = 100
	}
	p := verbstest.New(t, verbstest.Options{CQSize: 2 * pairs})
	src, dst := p.A.Buffer(t, 64, 3), p.B.Buffer(t, 64*pairs, 0)
	c := verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}
	newQP := func(s *verbstest.Side) *verbs.QP {
		qp, err := s.PD.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: s.SendCQ, RecvCQ: s.RecvCQ, Cap: c})
		if err != nil {
			t.Fatal(err)
		}
		return qp
	}
	before := heap()
	qps := make([]*verbs.QP, 0, 2*pairs)
	o := verbs.DefaultConnectOptions()
	for i := range pairs {
		a, b := newQP(p.A), newQP(p.B)
		if err := a.ConnectRC(1, b.Endpoint(2), o); err != nil {
			t.Fatal(err)
		}
		if err := b.ConnectRC(2, a.Endpoint(1), o); err != nil {
			t.Fatal(err)
		}
		post(t, a, &verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, 64)},
			RemoteAddr: dst.Addr() + uint64(64*i), RKey: dst.RKey()})
		qps = append(qps, a, b)
	}
	for _, wc := range verbstest.MustPoll(t, p.A.SendCQ, pairs) {
		if wc.Status != verbs.WCSuccess {
			t.Fatalf("WRITE: %v", wc.Status)
		}
	}
	perQP := (float64(heap()) - float64(before)) / float64(len(qps))
	t.Logf("%d connected QPs: %.1f KiB each", len(qps), perQP/1024)
	if perQP > 32<<10 {
		t.Errorf("a connected QP holds %.1f KiB, want at most 32", perQP/1024)
	}
	if !bytes.Equal(dst.Bytes()[64*(pairs-1):], src.Bytes()) {
		t.Error("the last WRITE did not arrive")
	}
	for _, qp := range qps {
		qp.Close()
	}
}

// BenchmarkManyQPs reports the WRITE rate of 1, 10, 100 and 1,000 QP pairs
// with a few WRITEs each in flight, over memconn and loopback UDP.
func BenchmarkManyQPs(b *testing.B) {
	for _, link := range links {
		for _, pairs := range []int{1, 10, 100, 1000} {
			b.Run(fmt.Sprintf("%v/%d", link, pairs), func(b *testing.B) {
				const ops, size = 4, 1024
				// One set of pairs for every iteration: pairs made per
				// iteration live until the benchmark ends, and 100
				// iterations of 1,000 pairs ran a machine out of memory.
				m := newManyQPs(b, link, pairs, ops, size)
				var elapsed time.Duration
				for i := 0; b.Loop(); i++ {
					elapsed += m.run(b, byte(i))
				}
				b.ReportMetric(float64(b.N*pairs*ops)/elapsed.Seconds(), "ops/s")
			})
		}
	}
}
