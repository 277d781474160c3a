package verbs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// lossFabrics are the two fabrics of BenchmarkLossRecovery: the lab's
// netem line (delay 1ms loss 3% reorder 5% duplicate 1%) and the same
// delay without the impairments, the loss-free figure it is compared with.
var lossFabrics = []struct {
	name string
	im   memconn.Impairments
}{
	{"delay", memconn.Impairments{Delay: time.Millisecond}},
	{"netem", memconn.Impairments{Delay: time.Millisecond, Loss: 0.03, Reorder: 0.05, Duplicate: 0.01, Seed: 3}},
}

// BenchmarkLossRecovery measures 64 KiB WRITEs, READs and SENDs, 16 in
// flight, between two goverbs devices over memconn with and without the
// lab's impairments: loss recovery is as good as the netem figure's share
// of the delay one (issue target: at least 40 %). The requester's
// retransmission counters are reported per operation.
func BenchmarkLossRecovery(b *testing.B) {
	for _, op := range []verbs.WROpcode{verbs.WRRDMAWrite, verbs.WRRDMARead, verbs.WRSend} {
		for _, f := range lossFabrics {
			b.Run(fmt.Sprintf("%v/%s", op, f.name), func(b *testing.B) { benchLossy(b, op, f.im) })
		}
	}
}

func benchLossy(b *testing.B, op verbs.WROpcode, im memconn.Impairments) {
	const size, depth = 65536, 16
	p := verbstest.New(b, verbstest.Options{Impairments: im, CQSize: 4 * depth,
		Cap: verbs.QPCap{MaxSendWR: depth, MaxRecvWR: 2 * depth}})
	src, dst := p.A.Buffer(b, size, 1), p.B.Buffer(b, size, 2)
	wr := verbs.SendWR{Opcode: op, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, size)},
		RemoteAddr: dst.Addr(), RKey: dst.RKey()}
	recv := verbs.RecvWR{SGList: []verbs.SGE{dst.SGE(0, size)}}
	if op == verbs.WRSend {
		for range 2 * depth {
			if err := p.B.QP.PostRecv(&recv); err != nil {
				b.Fatal(err)
			}
		}
	}
	rwcs := make([]verbs.WC, 2*depth)
	b.SetBytes(size)
	keepInFlight(b, p.A.SendCQ, depth, func() {
		if op == verbs.WRSend {
			n, err := p.B.RecvCQ.Poll(rwcs)
			for i := 0; err == nil && i < n; i++ {
				if rwcs[i].Status != verbs.WCSuccess {
					b.Fatal(rwcs[i])
				}
				err = p.B.QP.PostRecv(&recv)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := p.A.QP.PostSend(&wr); err != nil {
			b.Fatal(err)
		}
	})
	c := p.A.Dev.Counters()
	b.ReportMetric(float64(c.Get(verbs.RetransmittedPkts))/float64(b.N), "resent/op")
	b.ReportMetric(float64(c.Get(verbs.CompleterRetryErr))/float64(b.N), "retries/op")
	b.ReportMetric(float64(c.Get(verbs.LocalACKTimeout))/float64(b.N), "timeouts/op")
}
